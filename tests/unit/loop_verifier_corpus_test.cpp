// Every kernel the compiler makes today passes the loop-IR verifier, as
// lowered and as scheduled: the examples (concrete and declared types) and
// the conformance corpus, each with the default options, with one thread (no
// parallel loops) and with every applicable algorithm candidate of its
// contractions forced. Kernels are built through the compile pipeline
// without code generation (the loop-eval backend) to keep the test fast.
#include <gtest/gtest.h>

#include <set>

#include "api/compile_internal.h"
#include "ir/loop/verifier.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "tests/unit/compiled_programs_util.h"
#include "tests/unit/conformance_corpus.h"
// The conformance runner's JSON reader, compiled into this test (see
// compiled_programs_util.h).
#include "tests/conformance/json.cpp"

namespace kiln::test {
namespace {

struct Tally {
  int functions = 0, kernels = 0;
};

void verify_all(const std::string& what, const std::vector<loop::Kernel>& kernels, Tally& t) {
  for (const loop::Kernel& k : kernels) {
    ++t.kernels;
    try {
      loop::verify_kernel(k);
    } catch (const Error& e) {
      ADD_FAILURE() << what << ":\n" << e.what() << "\n" << loop::to_string(k);
    }
  }
}

// Builds `p` with `o` (and `algorithm` forced when not empty) and verifies
// its kernels; false when the forced algorithm does not apply.
bool build_and_verify(const Program& p, const CompileOptions& o, const std::string& label,
                      const std::string& algorithm, Tally& t) {
  std::shared_ptr<CompiledFunction::Impl> impl;
  try {
    impl = compile_detail::build_with_algorithm(p.fn.graph(), o, "loop-eval", algorithm);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    if (!algorithm.empty()) return false;  // the candidate does not apply to every contraction
    ADD_FAILURE() << p.name << " (" << label << ") does not compile: " << e.what();
    return false;
  }
  ++t.functions;
  std::string what = p.name + " (" + label + (algorithm.empty() ? "" : ", " + algorithm) + ")";
  verify_all(what + " lowered", impl->lowered, t);
  verify_all(what + " scheduled", impl->scheduled, t);
  if (!algorithm.empty()) return true;
  std::set<std::string> candidates;
  for (const passes::KernelGroup& g : impl->groups) {
    for (const passes::AlgorithmCandidate& c : g.algorithm.candidates) {
      if (c.applies && c.name != g.algorithm.name) candidates.insert(c.name);
    }
  }
  for (const std::string& c : candidates) build_and_verify(p, o, label, c, t);
  return true;
}

Tally verify_programs(const std::vector<Program>& programs) {
  Tally t;
  CompileOptions one_thread;
  one_thread.num_threads = 1;
  for (const Program& p : programs) {
    build_and_verify(p, CompileOptions{}, "default", "", t);
    build_and_verify(p, one_thread, "one thread", "", t);
  }
  return t;
}

TEST(LoopVerifierCorpus, ExampleKernelsVerify) {
  Programs all;
  programs_detail::add_examples(all);
  ASSERT_GE(all.programs.size(), 7u);
  Tally t = verify_programs(all.programs);
  std::cout << "verified " << t.kernels << " kernels of " << t.functions
            << " compiled functions of " << all.programs.size() << " example programs\n";
  EXPECT_GT(t.kernels, 50);
}

TEST(LoopVerifierCorpus, ConformanceKernelsVerify) {
  KILN_SKIP_WITHOUT_CORPUS();
  Programs all;
  programs_detail::add_corpus(all);
  ASSERT_TRUE(all.corpus_found) << "no corpus.json in " << conformance_dir();
  Tally t = verify_programs(all.programs);
  std::cout << "verified " << t.kernels << " kernels of " << t.functions
            << " compiled functions of " << all.programs.size() << " corpus cases ("
            << all.skipped.size() << " cases not lowered)\n";
  for (const std::string& s : all.skipped) std::cout << "  not lowered: " << s << "\n";
  EXPECT_GT(all.programs.size(), 50u);
}

}  // namespace
}  // namespace kiln::test
