// Every registry op through the compiled path, against ir::interpret: the
// cases of op_cases.h (each op x every dtype it accepts x odd sizes, strided
// and broadcast views). Tolerances: exact for int/bool/layout, f32
// elementwise 1e-5 rel, transcendental 5e-4 rel / 5e-5 abs,
// reductions/contractions 1e-3 rel; 16-bit floats a few ulps.
//
// Runs for the "llvm" backend (skipped when Kiln is built without LLVM), for
// "loop-eval" (same lowering and schedule, evaluated), so a failure that
// shows up only under llvm is a code generation bug, and on the "sim" device
// (GPU target: GPU candidates, GPU-mapped kernels run by the evaluator on the
// simulated GPU, the inputs copied there from the host by the plan and the
// outputs copied back). Failures are collected
// per op and printed with op, dtype, run and the scheduled loop IR.
//
// The "cuda" shards run nothing: they generate every graph's kernels for a
// cuda device without one (CompileOptions::load false) and compile them with
// NVRTC in batches: check 6c of issue 12 (tests/unit/cuda_check_util.h).
// Skipped, with the reason, when NVRTC is absent.
#include <gtest/gtest.h>

#include <set>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "runtime/device.h"
#include "tests/unit/cuda_check_util.h"
#include "tests/unit/op_cases.h"

namespace kiln::test {
namespace {

using namespace op_cases;

class Checker : public OpCaseSink {
 public:
  // "llvm", "loop-eval" (on the host), "sim" (loop-eval on sim:0), "cuda"
  // (kernels generated for cuda and compiled by NVRTC; nothing runs) or "gpu"
  // (the cuda backend on cuda:0, run and compared: only where a GPU is).
  explicit Checker(std::string config) : backend_(std::move(config)) {}

  // Compiles `g` once and runs it on every feed against the interpreter.
  void check(const ir::OpDef& op, const std::string& label, const ir::Graph& g,
             const std::vector<Run>& runs) override {
    ++graphs_;
    if (backend_ == "cuda") {
      cuda_.add(op.name + " " + label, g);
      return;
    }
    CompileOptions o;
    o.backend = backend_ == "sim" ? "loop-eval" : backend_ == "gpu" ? "cuda" : backend_;
    if (backend_ == "sim") o.device = Device::sim(0);
    if (backend_ == "gpu") o.device = Device::cuda(0);
    CompiledFunction f;
    try {
      f = compile(g, o);
    } catch (const Error& e) {
      fail(op, label + ": compile: " + e.what(), g, nullptr);
      return;
    }
    for (const Run& r : runs) {
      std::vector<Tensor> want;
      std::string reference_error;
      try {
        want = ir::interpret(g, r.feed);
      } catch (const Error& e) {
        reference_error = e.what();
      }
      if (!reference_error.empty()) {
        // An integer division by zero: the backend must raise it too (CUDA
        // kernels do not report it yet: docs/backends.md, "Kernel status
        // word"). Other rejected values (e.g. an integer power < 0) are not compared.
        std::string want_error;
        for (const char* m :
             {"div: integer division by zero", "remainder: integer division by zero"}) {
          if (reference_error.find(m) != std::string::npos) want_error = m;
        }
        if (want_error.empty() || backend_ == "gpu") continue;
        ++runs_;
        try {
          f(r.feed);
          fail(op,
               label + " " + r.what + ": the interpreter raised '" + want_error +
                   "', the backend did not",
               g, &f);
        } catch (const Error& e) {
          if (std::string(e.what()).find(want_error) == std::string::npos) {
            fail(op,
                 label + " " + r.what + ": raised '" + e.what() + "', the interpreter '" +
                     want_error + "'",
                 g, &f);
          }
        }
        continue;
      }
      ++runs_;
      std::vector<Tensor> got;
      try {
        got = f(r.feed);
      } catch (const Error& e) {
        fail(op, label + " " + r.what + ": run: " + e.what(), g, &f);
        continue;
      }
      if (got.size() != want.size()) {
        fail(op, label + " " + r.what + ": output count", g, &f);
        continue;
      }
      bool on_host = true;
      for (const Tensor& t : got) on_host = on_host && (!t.defined() || t.device().is_cpu());
      if (!on_host) {
        fail(op, label + " " + r.what + ": an output did not come back to the host", g, &f);
        continue;
      }
      for (size_t i = 0; i < got.size(); ++i) {
        Tol t = tolerance(op, want[i].dtype());
        ::testing::AssertionResult ok = tensors_close(got[i], want[i], t.rtol, t.atol);
        if (!ok) {
          fail(op, label + " " + r.what + " output " + std::to_string(i) + ": " + ok.message(), g,
               &f);
        }
      }
    }
  }

  void report() {
    if (backend_ == "cuda") {
      for (const std::string& f : cuda_.run()) failures_.push_back(f);
      std::cout << "cuda (check 6c): " << cuda_.summary() << "\n";
    }
    std::ostringstream os;
    for (const std::string& f : failures_) os << f << "\n";
    EXPECT_TRUE(failures_.empty()) << failures_.size() << " failures under " << backend_ << ":\n"
                                   << os.str();
    std::cout << backend_ << ": " << graphs_ << " graphs, " << runs_ << " runs compared\n";
  }

 private:
  void fail(const ir::OpDef& op, const std::string& what, const ir::Graph& g,
            const CompiledFunction* f) {
    std::string msg = op.name + " " + what;
    // The graph and loop IR once per op, to keep the report readable.
    if (shown_.insert(op.name).second) {
      msg += "\n" + ir::print_graph(g);
      try {
        // A kernel that did not compile still has loop IR: show it from the evaluator's path.
        CompileOptions o;
        o.backend = "loop-eval";
        std::string loops = f ? f->dump("loops-scheduled") : compile(g, o).dump("loops-scheduled");
        msg += loops.substr(0, 1500);
      } catch (const Error& e) {
        msg += std::string("(no loop IR: ") + e.what() + ")\n";
      }
    }
    failures_.push_back(msg);
  }

  std::string backend_;
  std::vector<std::string> failures_;
  std::set<std::string> shown_;
  int graphs_ = 0, runs_ = 0;
  CudaCompileCheck cuda_;  // "cuda": the kernels gathered
};

// (backend, shard): ops are dealt round-robin into kShards shards, so each
// ctest entry stays short and they can run in parallel.
constexpr int kShards = 4;
class LlvmOps : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(LlvmOps, EveryOpEveryDtypeMatchesTheInterpreter) {
  const auto& [backend, shard] = GetParam();
#ifndef KILN_WITH_LLVM
  if (backend == "llvm") GTEST_SKIP() << "Kiln built without LLVM";
#endif
  if (backend == "cuda") {
    if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  if (backend == "gpu") {
    if (std::string why = runtime::device_unavailable_reason(Device::cuda(0)); !why.empty())
      GTEST_SKIP() << "no GPU to run on (scripts/gpu-check runs these where there is one): " << why;
  }
  Checker c(backend);
  std::vector<const ir::OpDef*> ops = ir::OpRegistry::global().all();
  for (size_t i = size_t(shard); i < ops.size(); i += kShards) generate(c, *ops[i]);
  c.report();
}

INSTANTIATE_TEST_SUITE_P(Backends, LlvmOps,
                         ::testing::Combine(::testing::Values("llvm", "loop-eval", "sim", "cuda",
                                                              "gpu"),
                                            ::testing::Range(0, kShards)),
                         [](const auto& info) {
                           std::string b = std::get<0>(info.param) == "loop-eval"
                                               ? "loop_eval"
                                               : std::get<0>(info.param);
                           return b + "_shard" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace kiln::test
