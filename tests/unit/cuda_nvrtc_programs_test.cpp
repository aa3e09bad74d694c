// Check 6c of issue 12 on the examples (with the demo's inputs, and with
// their declared types) and the visible conformance corpus: every kernel Kiln
// generates for a cuda device compiles with NVRTC to an sm_90 CUBIN without
// spills, without local memory outside contraction kernels, and within 48 KiB
// of shared memory (tests/unit/cuda_check_util.h). The op tests' graphs get
// the same check in llvm_ops_test (its "cuda" shards). Skipped, with the
// reason, when NVRTC is absent.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/unit/compiled_programs_util.h"
#include "tests/unit/cuda_check_util.h"
// The conformance runner's JSON reader, compiled into this test (see
// compiled_programs_util.h).
#include "tests/conformance/json.cpp"

namespace kiln::test {
namespace {

void check_programs(const std::vector<Program>& programs, size_t min_kernels) {
  CudaCompileCheck check;
  for (const Program& p : programs) check.add(p.name, p.fn.graph());
  std::vector<std::string> failures = check.run();
  std::cout << "cuda (check 6c): " << check.summary() << "\n";
  std::string all;
  for (const std::string& f : failures) all += f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << all;
  EXPECT_GE(check.kernels(), min_kernels);
}

TEST(CudaNvrtcPrograms, ExampleKernelsCompileWithoutSpills) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Programs all;
  programs_detail::add_examples(all);
  ASSERT_GE(all.programs.size(), 7u);
  check_programs(all.programs, 15);
}

TEST(CudaNvrtcPrograms, ConformanceKernelsCompileWithoutSpills) {
  if (std::string why = CudaCompileCheck::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Programs all;
  programs_detail::add_corpus(all);
  if (!all.corpus_found) {
    GTEST_SKIP() << "no conformance corpus at " << shared_dir()
                 << "/conformance (set KILN_SHARED_DIR)";
  }
  for (const std::string& s : all.skipped) std::cout << "  not lowered: " << s << "\n";
  check_programs(all.programs, 50);
}

}  // namespace
}  // namespace kiln::test
