// Check 6b of issue 12: every op-test case's emitted CUDA C, run by the CUDA
// emulator, computes the interpreter's values. The cases of op_cases.h (the
// generator llvm_ops_test runs) go through emu_check.h: compiled for sim:0,
// the kernels' CUDA C of a shard built in ONE compiler run, the plan
// launching the emulated kernels, every output of every run (sizes 0, 1, 7,
// 33, 1023, strided and stride-0 views, NaN/Inf where the generator makes
// them) compared with ir::interpret under llvm_ops_test's tolerances.
//
// Cost: the shard's compiler run dominates, so not every case is emulated:
// every op in its main dtype (f32 where it takes f32, else the first it
// takes; mixed-dtype cases with f32 included), and every dtype for the ops
// of kAllDTypes, which cover what a dtype changes in the emitted C (16-bit
// float rounding, integer wrap and floor division, saturating casts, NaN
// propagation, each kind of reduction).
#include <gtest/gtest.h>

#include <set>

#include "tests/emu/emu_check.h"
#include "tests/unit/op_cases.h"

namespace kiln::test {
namespace {

using namespace op_cases;

// Ops emulated in every dtype they take.
const std::set<std::string> kAllDTypes = {
    "add", "mul",  "div",    "remainder", "maximum", "cast",   "exp",     "neg", "where",
    "sum", "amax", "argmax", "mean",      "softmax", "matmul", "permute", "cat"};

// The dtype a case is "in": its first non-bool tensor input (its first input
// when all are bool, its first output when it has no inputs).
DType case_dtype(const ir::Graph& g) {
  for (const auto& v : g.inputs()) {
    if (v->type().is_tensor() && v->type().dtype() != DType::Bool) return v->type().dtype();
  }
  if (!g.inputs().empty() && g.inputs()[0]->type().is_tensor()) {
    return g.inputs()[0]->type().dtype();
  }
  return g.outputs().empty() ? DType::F32 : g.outputs()[0]->type().dtype();
}

bool has_f32_input(const ir::Graph& g) {
  for (const auto& v : g.inputs()) {
    if (v->type().is_tensor() && v->type().dtype() == DType::F32) return true;
  }
  return false;
}

// The op-test cases a shard emulates (see the top comment for which).
class EmuCases : public OpCaseSink {
 public:
  // Cases of one op wait until the op's last one, to choose among them.
  void check(const ir::OpDef& op, const std::string& label, const ir::Graph& g,
             const std::vector<Run>& runs) override {
    if (!pending_.empty() && pending_.front().op != &op) flush();
    pending_.push_back({&op, op.name + " " + label, g.clone(), runs});
  }

  void run_and_report(const std::string& shard) {
    flush();
    check_.run_and_report(shard);
  }

 private:
  struct Pending {
    const ir::OpDef* op;
    std::string what;
    std::unique_ptr<ir::Graph> graph;
    std::vector<Run> runs;
  };

  // Keeps every case of an op of kAllDTypes; of the others, those with an f32
  // input, or (an op that takes no f32) those in the op's first dtype.
  void flush() {
    if (pending_.empty()) return;
    const bool all = kAllDTypes.count(pending_.front().op->name) != 0;
    bool f32 = false;
    for (const Pending& p : pending_) f32 = f32 || has_f32_input(*p.graph);
    const DType first = case_dtype(*pending_.front().graph);
    for (const Pending& p : pending_) {
      if (!all && (f32 ? !has_f32_input(*p.graph) : case_dtype(*p.graph) != first)) continue;
      std::vector<emutest::EmuRun> runs;
      for (const Run& r : p.runs) runs.push_back({r.what, r.feed});
      const ir::OpDef* op = p.op;
      check_.add(op->name, p.what, *p.graph, runs, [op](DType t) {
        const Tol tol = tolerance(*op, t);
        return std::pair{tol.rtol, tol.atol};
      });
    }
    pending_.clear();
  }

  std::vector<Pending> pending_;
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
