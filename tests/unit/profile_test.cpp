// CompiledFunction::profile and the machine peaks it compares with: kernels
// follow the plan, bytes and flops are what the shapes say (exactly for a
// matmul), times nest inside the call, chunks of parallel loops lie inside
// their kernel, every backend that runs a plan can be profiled, and the
// peaks' cache entry is validated like the other caches.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cache_test_util.h"
#include "kiln/kiln.h"
#include "runtime/disk_cache.h"
#include "runtime/machine_peaks.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

using kiln::test::ScopedEnv;
using kiln::test::TempDir;

Function matmul_only() {
  Builder b("mm");
  Var x = b.input("x", DType::F32, {sym("N"), 64});
  Var w = b.input("w", DType::F32, {64, 32});
  return b.build({matmul(x, w)});
}

Function mlp_and_sum() {
  Builder b("mlp");
  Var x = b.input("x", DType::F32, {sym("N"), 64});
  Var w = b.input("w", DType::F32, {64, 32});
  Var bias = b.input("b", DType::F32, {32});
  Var h = relu(matmul(x, w) + bias);
  return b.build({h, sum(exp(h), {1})});
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.data<float>()[i] != y.data<float>()[i]) return false;
  }
  return true;
}

class Profile : public ::testing::TestWithParam<std::string> {
 protected:
  CompileOptions opts() const {
    CompileOptions o;
    o.backend = GetParam() == "sim" ? "loop-eval" : GetParam();
    if (GetParam() == "sim") o.device = Device::sim(0);
    return o;
  }
  void SetUp() override {
    for (const BackendInfo& b : available_backends()) {
      if (b.name == opts().backend && !b.available) GTEST_SKIP() << b.why_unavailable;
    }
  }
};

TEST_P(Profile, MatmulBytesAndFlopsAreExact) {
  CompiledFunction f = compile(matmul_only(), opts());
  for (int64_t n : {1, 7, 129}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    std::vector<Tensor> in = {Tensor::randn({n, 64}, 1), Tensor::randn({64, 32}, 2)};
    CallProfile p;
    std::vector<Tensor> out = f.profile(in, &p);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(same(out[0], f(in)[0]));
    EXPECT_EQ(p.function, "@mm");
    EXPECT_EQ(p.backend, opts().backend);
    ASSERT_EQ(p.kernels.size(), 1u);
    const KernelProfile& k = p.kernels[0];
    EXPECT_EQ(k.category, "contraction");
    EXPECT_FALSE(k.algorithm.empty());
    EXPECT_EQ(k.flops, 2.0 * double(n) * 64 * 32);
    EXPECT_FALSE(k.flops_estimated);
    EXPECT_EQ(k.bytes_read, (n * 64 + 64 * 32) * 4);
    EXPECT_EQ(k.bytes_written, n * 32 * 4);
    EXPECT_EQ(k.device, opts().device.str());
    EXPECT_GT(k.seconds, 0);
    EXPECT_LE(k.seconds, p.seconds);
    EXPECT_GE(k.begin_s, 0);
    EXPECT_LE(k.begin_s + k.seconds, p.seconds + 1e-9);
    EXPECT_NEAR(k.share, k.seconds / p.seconds, 1e-12);
    EXPECT_NEAR(k.gflop_per_s, k.flops / k.seconds * 1e-9, 1e-9 * k.gflop_per_s);
    if (opts().device.is_cpu()) {
      EXPECT_NEAR(k.bandwidth_fraction, k.gb_per_s / p.peaks.bandwidth_gbs, 1e-12);
      EXPECT_NEAR(k.fma_fraction, k.gflop_per_s / p.peaks.fma_gflops, 1e-12);
    } else {
      EXPECT_EQ(k.bandwidth_fraction, -1);  // the peaks are the host's
    }
  }
}

TEST_P(Profile, KernelsFollowThePlanInOrder) {
  CompiledFunction f = compile(mlp_and_sum(), opts());
  std::vector<Tensor> in = {Tensor::randn({33, 64}, 1), Tensor::randn({64, 32}, 2),
                            Tensor::randn({32}, 3)};
  CallProfile p;
  std::vector<Tensor> out = f.profile(in, &p);
  std::vector<Tensor> want = f(in);
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(same(out[i], want[i])) << i;
  ASSERT_EQ(int(p.kernels.size()), f.num_kernels());
  const std::string explain = f.explain();
  double total = 0, last_begin = -1;
  for (const KernelProfile& k : p.kernels) {
    SCOPED_TRACE(k.name);
    EXPECT_NE(explain.find(" " + k.name + " [" + k.category), std::string::npos);
    EXPECT_GT(k.flops, 0);
    EXPECT_GT(k.bytes_read + k.bytes_written, 0);
    EXPECT_GE(k.begin_s, last_begin);
    last_begin = k.begin_s + k.seconds;
    total += k.share;
  }
  EXPECT_LE(total, 1.0 + 1e-9);
  // The fused matmul + add + relu: 2*M*N*K plus the epilogue, an estimate.
  EXPECT_TRUE(p.kernels[0].flops_estimated);
  EXPECT_GE(p.kernels[0].flops, 2.0 * 33 * 64 * 32);
  const std::string table = p.table();
  EXPECT_NE(table.find("profile @mlp (" + opts().backend), std::string::npos) << table;
  for (const KernelProfile& k : p.kernels) EXPECT_NE(table.find(k.name), std::string::npos);
  const std::string trace = p.trace_json();
  size_t kernel_events = 0;
  for (size_t at = 0; (at = trace.find("\"cat\":\"kernel\"", at)) != std::string::npos; ++at) {
    ++kernel_events;
  }
  EXPECT_EQ(kernel_events, p.kernels.size());
  EXPECT_EQ(trace.rfind("{\"traceEvents\":[", 0), 0u);
}

TEST_P(Profile, EmptyInputSkipsKernels) {
  CompiledFunction f = compile(matmul_only(), opts());
  CallProfile p;
  f.profile({Tensor::randn({0, 64}, 1), Tensor::randn({64, 32}, 2)}, &p);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(p.kernels[0].skipped);
  EXPECT_EQ(p.kernels[0].seconds, 0);
  EXPECT_NE(p.table().find("skipped"), std::string::npos);
  EXPECT_EQ(p.trace_json().find("\"cat\":\"kernel\""), std::string::npos);
}

TEST_P(Profile, BadInputIsAnErrorAsInRun) {
  CompiledFunction f = compile(matmul_only(), opts());
  CallProfile p;
  EXPECT_THROW(f.profile({Tensor::randn({3, 63}, 1), Tensor::randn({64, 32}, 2)}, &p), Error);
  EXPECT_THROW(f.profile({Tensor::randn({3, 64}, 1), Tensor::randn({64, 32}, 2)}, nullptr), Error);
  // The failed call left no observer behind: a later profile still works.
  f.profile({Tensor::randn({3, 64}, 1), Tensor::randn({64, 32}, 2)}, &p);
  EXPECT_EQ(p.kernels.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Profile, ::testing::Values("llvm", "loop-eval", "sim"));

TEST(ProfileChunks, ParallelChunksLieInsideTheirKernel) {
  if (num_threads() < 2) GTEST_SKIP() << "one pool thread: no parallel loops";
  Builder b("big");
  Var x = b.input("x", DType::F32, {sym("N")});
  Function fn = b.build({exp(x) * 2.0 + 1.0});
  CompiledFunction f = compile(fn);
  std::vector<Tensor> in = {Tensor::randn({1 << 22}, 1)};
  CallProfile p;
  f.profile(in, &p);
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_FALSE(p.spans.empty()) << "a 4M-element loop ran serially";
  const KernelProfile& k = p.kernels[0];
  int64_t covered = 0;
  for (const ThreadSpan& s : p.spans) {
    EXPECT_EQ(s.kernel, 0);
    EXPECT_GE(s.thread, 0);
    EXPECT_LT(s.thread, p.threads);
    EXPECT_GE(s.begin_s, k.begin_s - 1e-9);
    EXPECT_LE(s.begin_s + s.seconds, k.begin_s + k.seconds + 1e-9);
    covered += s.end - s.begin;
  }
  EXPECT_GT(covered, 0);
  EXPECT_NE(p.trace_json().find("kiln-worker-"), std::string::npos);
}

TEST(ProfileInterp, TheInterpreterHasNoKernels) {
  CompileOptions o;
  o.backend = "interp";
  CompiledFunction f = compile(matmul_only(), o);
  CallProfile p;
  std::vector<Tensor> out = f.profile({Tensor::randn({5, 64}, 1), Tensor::randn({64, 32}, 2)}, &p);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_TRUE(p.kernels.empty());
  EXPECT_GT(p.seconds, 0);
  EXPECT_NE(p.table().find("no kernels"), std::string::npos);
}

// ------------------------------------------------------------------------------- peaks

// The load average the peaks tests say it is now, so that the re-measuring
// rule (a quieter machine) does not depend on the neighbours.
constexpr double kLoad = 0.5;

TEST(MachinePeaks, MeasuredOnceThenFromTheCache) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv cache_on("KILN_CACHE", nullptr);
  runtime::MachinePeaks first = runtime::load_or_measure_machine_peaks(kLoad);
  EXPECT_EQ(first.source, "measured");
  EXPECT_GT(first.bandwidth_gbs, 0);
  EXPECT_GT(first.fma_gflops, 0);
  EXPECT_EQ(first.threads, num_threads());
  EXPECT_FALSE(first.isa.empty());
  EXPECT_EQ(runtime::machine_peaks_entry_path().rfind(dir.path() + "/machine/", 0), 0u);
  runtime::MachinePeaks again = runtime::load_or_measure_machine_peaks(kLoad);
  EXPECT_EQ(again.source, "cache");
  EXPECT_EQ(again.bandwidth_gbs, first.bandwidth_gbs);
  EXPECT_EQ(again.fma_gflops, first.fma_gflops);
  EXPECT_EQ(again.isa, first.isa);
}

TEST(MachinePeaks, ABadRecordIsMeasuredAgainAndReplaced) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv cache_on("KILN_CACHE", nullptr);
  runtime::MachinePeaks good = runtime::load_or_measure_machine_peaks(kLoad);
  runtime::DiskCache disk(dir.path() + "/machine", "test");
  // Intact bytes (checksums hold) that are no valid record: each is measured again.
  const std::string records[] = {
      "junk",
      "kiln-machine-peaks 2\nbandwidth_gbs nan\nfma_gflops 1\nthreads 1\nisa x\nload 0\n",
      "kiln-machine-peaks 2\nbandwidth_gbs -5\nfma_gflops 1\nthreads 1\nisa x\nload 0\n",
      "kiln-machine-peaks 2\nbandwidth_gbs 1e300\nfma_gflops 1\nthreads 1\nisa x\nload 0\n",
      // another thread count or vector unit than this process has
      "kiln-machine-peaks 2\nbandwidth_gbs 10\nfma_gflops 100\nthreads 100000\nisa " + good.isa + "\n",
      "kiln-machine-peaks 2\nbandwidth_gbs 10\nfma_gflops 100\nthreads " +
          std::to_string(good.threads) + "\nisa other\nload 0\n",
  };
  for (const std::string& record : records) {
    SCOPED_TRACE(record);
    ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(), record));
    EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
    EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "cache");  // replaced
  }
  // Damaged bytes: DiskCache's checksums turn them into a miss.
  {
    std::FILE* f = std::fopen(runtime::machine_peaks_entry_path().c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, -3, SEEK_END);
    std::fputs("zz", f);
    std::fclose(f);
  }
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
  // A record of this machine is trusted.
  runtime::MachinePeaks forged = good;
  forged.bandwidth_gbs = 12.5;
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(),
                         runtime::serialize_machine_peaks(forged)));
  runtime::MachinePeaks read = runtime::load_or_measure_machine_peaks(kLoad);
  EXPECT_EQ(read.source, "cache");
  EXPECT_EQ(read.bandwidth_gbs, 12.5);
}

// A record an earlier Kiln wrote (format 1, without the load) is replaced
// quietly; junk still warns that the entry is corrupt.
TEST(MachinePeaks, AnOlderFormatIsReplacedWithoutAWarning) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv cache_on("KILN_CACHE", nullptr);
  runtime::MachinePeaks good = runtime::load_or_measure_machine_peaks(kLoad);
  runtime::DiskCache disk(dir.path() + "/machine", "test");
  const std::string v1 = "kiln-machine-peaks 1\nbandwidth_gbs 4.3\nfma_gflops 91.4\nthreads " +
                         std::to_string(good.threads) + "\nisa " + good.isa + "\n";
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(), v1));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "cache");  // replaced
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(), "junk"));
  testing::internal::CaptureStderr();
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("is corrupt"), std::string::npos);
}

TEST(MachinePeaks, CacheOffMeasuresEveryTime) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv cache_off("KILN_CACHE", "off");
  EXPECT_EQ(runtime::machine_peaks_entry_path(), "");
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "measured");
}

TEST(MachinePeaks, RecordRoundTripsAndRejectsJunk) {
  runtime::MachinePeaks p;
  p.bandwidth_gbs = 13.25;
  p.fma_gflops = 301.5;
  p.threads = 2;
  p.isa = "avx2+fma";
  std::optional<runtime::MachinePeaks> q =
      runtime::parse_machine_peaks(runtime::serialize_machine_peaks(p));
  ASSERT_TRUE(q);
  EXPECT_EQ(q->bandwidth_gbs, p.bandwidth_gbs);
  EXPECT_EQ(q->fma_gflops, p.fma_gflops);
  EXPECT_EQ(q->threads, 2);
  EXPECT_EQ(q->isa, "avx2+fma");
  const std::string text = runtime::serialize_machine_peaks(p);
  EXPECT_FALSE(runtime::parse_machine_peaks(""));
  EXPECT_FALSE(runtime::parse_machine_peaks(text + "extra\n"));
  EXPECT_FALSE(runtime::parse_machine_peaks(text.substr(0, text.size() - 5)));
  EXPECT_FALSE(runtime::parse_machine_peaks(
      "kiln-machine-peaks 2\nbandwidth_gbs 1x\nfma_gflops 1\nthreads 1\nisa a\nload 0\n"));
  EXPECT_FALSE(runtime::parse_machine_peaks(
      "kiln-machine-peaks 2\nbandwidth_gbs 1\nfma_gflops 1\nthreads 1.5\nisa a\nload 0\n"));
  EXPECT_FALSE(runtime::parse_machine_peaks(
      "kiln-machine-peaks 2\nbandwidth_gbs 1\nfma_gflops inf\nthreads 1\nisa a\nload 0\n"));
  EXPECT_FALSE(runtime::parse_machine_peaks(
      "kiln-machine-peaks 2\nbandwidth_gbs 1\nfma_gflops 1\nthreads 1\nisa a\n"));  // no load
  EXPECT_FALSE(runtime::parse_machine_peaks(  // the previous format
      "kiln-machine-peaks 1\nbandwidth_gbs 1\nfma_gflops 1\nthreads 1\nisa a\n"));
  for (const char* load : {"nan", "-2", "1e9", "x"}) {
    EXPECT_FALSE(runtime::parse_machine_peaks(
        std::string("kiln-machine-peaks 2\nbandwidth_gbs 1\nfma_gflops 1\nthreads 1\nisa a\nload ") +
        load + "\n"))
        << load;
  }
  p.load = -1;  // unknown
  ASSERT_TRUE(runtime::parse_machine_peaks(runtime::serialize_machine_peaks(p)));
  EXPECT_EQ(runtime::parse_machine_peaks(runtime::serialize_machine_peaks(p))->load, -1);
}

// Peaks cached while the machine was busy are measured again once its load
// is lower by 1 and by half; the better value of each peak is kept.
TEST(MachinePeaks, ABusyMachinesRecordIsMeasuredAgainWhenQuieter) {
  EXPECT_TRUE(runtime::remeasure_when_quieter(9.0, 1.0));
  EXPECT_TRUE(runtime::remeasure_when_quieter(2.0, 1.0));
  EXPECT_FALSE(runtime::remeasure_when_quieter(1.5, 1.0));
  EXPECT_FALSE(runtime::remeasure_when_quieter(5.0, 3.0));  // not half
  EXPECT_TRUE(runtime::remeasure_when_quieter(6.0, 3.0));
  EXPECT_FALSE(runtime::remeasure_when_quieter(1.0, 3.0));  // busier now
  EXPECT_FALSE(runtime::remeasure_when_quieter(-1, 0.0));   // unknown then
  EXPECT_FALSE(runtime::remeasure_when_quieter(9.0, -1));   // unknown now
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv cache_on("KILN_CACHE", nullptr);
  runtime::MachinePeaks good = runtime::load_or_measure_machine_peaks(kLoad);
  runtime::DiskCache disk(dir.path() + "/machine", "test");
  // Measured low under a load of 9: measured again at load 0.5, the new
  // values replace the low ones, and the record now says load 0.5.
  runtime::MachinePeaks busy = good;
  busy.bandwidth_gbs = 1e-3;
  busy.fma_gflops = 1e-3;
  busy.load = 9;
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(),
                         runtime::serialize_machine_peaks(busy)));
  runtime::MachinePeaks again = runtime::load_or_measure_machine_peaks(kLoad);
  EXPECT_EQ(again.source, "measured");
  EXPECT_GT(again.bandwidth_gbs, 1e-3);
  EXPECT_GT(again.fma_gflops, 1e-3);
  EXPECT_EQ(again.load, kLoad);
  runtime::MachinePeaks cached = runtime::load_or_measure_machine_peaks(kLoad);
  EXPECT_EQ(cached.source, "cache");
  EXPECT_EQ(cached.bandwidth_gbs, again.bandwidth_gbs);
  // A higher cached value survives a re-measurement (the best is kept).
  busy.bandwidth_gbs = 9e4;
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(),
                         runtime::serialize_machine_peaks(busy)));
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).bandwidth_gbs, 9e4);
  // Not quieter by a core: the record is used as it is.
  busy.load = 1.2;
  ASSERT_TRUE(disk.store(runtime::machine_peaks_key(), runtime::machine_peaks_key_text(),
                         runtime::serialize_machine_peaks(busy)));
  EXPECT_EQ(runtime::load_or_measure_machine_peaks(kLoad).source, "cache");
}


}  // namespace
}  // namespace kiln
