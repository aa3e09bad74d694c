// Check 6b of issue 12: every op-test case's emitted CUDA C, run by the CUDA
// emulator, computes the interpreter's values. The cases of op_cases.h (the
// generator llvm_ops_test runs: every op x every dtype it takes, 1218 graphs)
// go through emu_check.h: compiled for sim:0, the kernels' CUDA C of a shard
// built in ONE compiler run, the plan launching the emulated kernels, every
// output of every run (sizes 0, 1, 7, 33, 1023, strided and stride-0 views,
// NaN/Inf where the generator makes them) compared with ir::interpret under
// llvm_ops_test's tolerances.
//
// Cost: each shard's compiler run dominates (about 12 s a shard in release,
// where the harness compiles at -O1).
#include <gtest/gtest.h>

#include "tests/emu/emu_check.h"
#include "tests/unit/op_cases.h"

namespace kiln::test {
namespace {

using namespace op_cases;

// Hands every case to the emulation check, with the op's tolerances.
class EmuCases : public OpCaseSink {
 public:
  void check(const ir::OpDef& op, const std::string& label, const ir::Graph& g,
             const std::vector<Run>& runs) override {
    std::vector<emutest::EmuRun> emu_runs;
    for (const Run& r : runs) emu_runs.push_back({r.what, r.feed});
    const ir::OpDef* def = &op;
    check_.add(op.name, op.name + " " + label, g, emu_runs, [def](DType t) {
      const Tol tol = tolerance(*def, t);
      return std::pair{tol.rtol, tol.atol};
    });
  }
  void run_and_report(const std::string& shard) { check_.run_and_report(shard); }

 private:
  emutest::EmuCheck check_;
};

// Ops are dealt round-robin into kShards shards: one compiler run each, short
// enough for a ctest entry, and they run in parallel.
constexpr int kShards = 4;
class EmuOps : public ::testing::TestWithParam<int> {};

TEST_P(EmuOps, EmittedKernelsMatchTheInterpreter) {
  if (const std::string why = emutest::unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }
  EmuCases c;
  std::vector<const ir::OpDef*> ops = ir::OpRegistry::global().all();
  for (size_t i = size_t(GetParam()); i < ops.size(); i += kShards) generate(c, *ops[i]);
  c.run_and_report("shard " + std::to_string(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Shards, EmuOps, ::testing::Range(0, kShards),
                         [](const auto& info) { return "shard" + std::to_string(info.param); });

}  // namespace
}  // namespace kiln::test
