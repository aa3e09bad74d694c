// Offset arguments (issue 14, item 4): the steps of an unrolled loop read
// input[t] (select) or x[:, a:b] (slice) at a start that differs per step.
// Sibling selects/slices that differ only in the start take it as an i64
// kernel argument (ScalarRole::Offset), so the steps' kernels have one code,
// generated once; a lone select keeps its immediate. Values are checked
// against the reference interpreter on the native and loop-IR backends, the
// number of distinct kernels through explain(), and the disk cache still
// writes each distinct kernel once and reads it back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "kiln/kiln.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"
#include "cache_test_util.h"
#include "kernel_cache_fixture.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

const char* kSource = R"(
from typing import List

import torch
from torch import Tensor


def rnn(input: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor) -> Tensor:
    inputs = input.unbind(0)
    outputs: List[Tensor] = []
    for i in range(len(inputs)):
        h = torch.tanh(torch.mm(inputs[i], w_ih) + torch.mm(h, w_hh))
        outputs += [h]
    return torch.stack(outputs) * input[-1].sum()


def windows(x: Tensor, steps: int) -> Tensor:
    outputs: List[Tensor] = []
    for i in range(steps):
        outputs += [torch.sigmoid(x[:, 2 * i:2 * i + 3]).sum(1)]
    return torch.stack(outputs)
)";

const int64_t kBatch = 3, kIn = 5, kHidden = 6;

Function rnn(int64_t steps) {
  auto f32 = [](const char* name, std::vector<Dim> dims) {
    return bind_tensor(name, DType::F32, std::move(dims));
  };
  return Script::from_source(kSource, "offsets.py")
      .lower("rnn", {f32("input", {steps, kBatch, kIn}), f32("h", {kBatch, kHidden}),
                     f32("w_ih", {kIn, kHidden}), f32("w_hh", {kHidden, kHidden})});
}

std::vector<Tensor> rnn_inputs(int64_t steps) {
  return {Tensor::randn({steps, kBatch, kIn}, /*seed=*/1),
          Tensor::randn({kBatch, kHidden}, /*seed=*/2), Tensor::randn({kIn, kHidden}, /*seed=*/3),
          Tensor::randn({kHidden, kHidden}, /*seed=*/4)};
}

Function windows(int64_t steps) {
  return Script::from_source(kSource, "offsets.py")
      .lower("windows", {bind_tensor("x", DType::F32, {7, 2 * steps + 1}),
                         bind_value("steps", steps)});
}

int shared_kernels(const CompiledFunction& f) {
  std::string text = f.explain();
  int n = 0;
  for (size_t at = text.find("code: same as kernel"); at != std::string::npos;
       at = text.find("code: same as kernel", at + 1)) {
    ++n;
  }
  return n;
}

int distinct_kernels(const CompiledFunction& f) {
  return f.num_kernels() - shared_kernels(f);
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  Tensor g = got.to(DType::F64).contiguous(), w = want.to(DType::F64).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = g.data<double>()[i], e = w.data<double>()[i];
    ASSERT_NEAR(a, e, 1e-4 + 1e-4 * std::fabs(e)) << "element " << i;
  }
}

class OffsetArgs : public FreshCachesTest {};

TEST_F(OffsetArgs, UnrolledStepsShareOneCodeAndAgreeWithTheInterpreter) {
  CompileOptions o;
  o.disk_cache = false;
  std::map<int64_t, int> distinct;
  for (int64_t steps : {1, 2, 7, 16}) {
    SCOPED_TRACE("steps " + std::to_string(steps));
    Function f = rnn(steps);
    std::vector<Tensor> in = rnn_inputs(steps);
    Tensor want = f.run_interpreter(in)[0];
    CompiledFunction c = compile(f, o);
    distinct[steps] = distinct_kernels(c);
    expect_close(c(in)[0], want);
    CompileOptions eval = o;
    eval.backend = "loop-eval";
    expect_close(compile(f, eval)(in)[0], want);
  }
  // The step count no longer adds distinct code: the first step reads the
  // graph's h and the others an intermediate, nothing else differs.
  EXPECT_EQ(distinct[7], distinct[2]);
  EXPECT_EQ(distinct[16], distinct[2]);
  EXPECT_LE(distinct[7], distinct[1] + 3);
}

TEST_F(OffsetArgs, TheStartIsAKernelArgumentOnlyWhenSiblingsDiffer) {
  CompileOptions o;
  o.disk_cache = false;
  // The loop IR names the parameter; the plan passes each launch its value.
  CompiledFunction seven = compile(rnn(7), o);
  const std::string loops = seven.dump("loops");
  EXPECT_NE(loops.find("index: i64"), std::string::npos) << loops;
  const std::string plan = seven.dump("plan");
  EXPECT_NE(plan.find("), 6, stride(") , std::string::npos) << plan;  // input[6] and input[-1]
  // One step: input[0] and input[-1] are the same element, a lone select.
  const std::string one = compile(rnn(1), o).dump("loops");
  EXPECT_EQ(one.find("index: i64"), std::string::npos) << one;
}

TEST_F(OffsetArgs, SlicesInTheirOwnKernelsShareOneCode) {
  for (bool fuse : {false, true}) {
    for (int64_t steps : {1, 7}) {
      SCOPED_TRACE("steps " + std::to_string(steps) + (fuse ? " fused" : " unfused"));
      CompileOptions o;
      o.disk_cache = false;
      o.fuse = fuse;
      Function f = windows(steps);
      std::vector<Tensor> in = {Tensor::randn({7, 2 * steps + 1}, /*seed=*/5)};
      Tensor want = f.run_interpreter(in)[0];
      CompiledFunction c = compile(f, o);
      expect_close(c(in)[0], want);
      CompileOptions eval = o;
      eval.backend = "loop-eval";
      expect_close(compile(f, eval)(in)[0], want);
      const bool args = c.dump("loops").find("start: i64") != std::string::npos;
      // Unfused, each slice is a kernel of its own: one code for all steps.
      // Fused, the slices are siblings in one kernel (horizontal fusion):
      // nothing to share, so they keep their immediates.
      EXPECT_EQ(args, steps > 1 && !fuse) << c.dump("loops");
      if (steps > 1 && !fuse) {
        EXPECT_GE(shared_kernels(c), steps - 1) << c.explain();
      }
    }
  }
}

TEST_F(OffsetArgs, DiskCacheWritesEachDistinctKernelOnceAndReadsItBack) {
  const int64_t steps = 7;
  Function f = rnn(steps);
  std::vector<Tensor> in = rnn_inputs(steps);
  Tensor want = f.run_interpreter(in)[0];
  CompiledFunction cold = compile(f);
  const int distinct = distinct_kernels(cold);
  runtime::DiskCacheStats s = runtime::DiskCache::global().stats();
  EXPECT_EQ(s.writes, uint64_t(distinct));
  expect_close(cold(in)[0], want);
  // A fresh process (memory cache cleared) reads every kernel back.
  runtime::KernelCache::global().clear();
  runtime::DiskCache::global().reset_stats();
  CompiledFunction warm = compile(f);
  s = runtime::DiskCache::global().stats();
  EXPECT_EQ(s.writes, 0u);
  EXPECT_EQ(s.hits, uint64_t(distinct));
  expect_close(warm(in)[0], want);
  // Other offsets (fewer steps) are other launches of the same code: hits.
  runtime::KernelCache::global().clear();
  runtime::DiskCache::global().reset_stats();
  Function shorter = rnn(3);
  std::vector<Tensor> in3 = rnn_inputs(3);
  CompiledFunction c3 = compile(shorter);
  s = runtime::DiskCache::global().stats();
  EXPECT_EQ(s.hits + s.writes, uint64_t(distinct_kernels(c3)));
  expect_close(c3(in3)[0], shorter.run_interpreter(in3)[0]);
}

TEST_F(OffsetArgs, ParallelCodegenMakesTheSameBytesAsSerial) {
  Function f = rnn(7);
  std::vector<Tensor> in = rnn_inputs(7);
  CompileOptions o;
  o.use_cache = false;
  auto entries = [](const std::string& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".kc") out[e.path().filename().string()] = read_all(e.path());
    }
    return out;
  };
  std::map<std::string, std::string> serial, parallel;
  {
    TempDir d;
    ScopedEnv dir("KILN_CACHE_DIR", d.path().c_str());
    ScopedEnv threads("KILN_COMPILE_THREADS", "1");
    compile(f, o)(in);
    serial = entries(d.path());
  }
  {
    TempDir d;
    ScopedEnv dir("KILN_CACHE_DIR", d.path().c_str());
    ScopedEnv threads("KILN_COMPILE_THREADS", "3");
    compile(f, o)(in);
    parallel = entries(d.path());
  }
  EXPECT_GT(serial.size(), 1u);
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace kiln::test
