// Measured autotuning (api/autotune.cpp) with candidates this test registers
// itself (passes/lower/test_algorithms.h), switched on per test:
//   test.zero       stores 0: the fastest there is, wrong, and the heuristic's top score
//   test.drop_last  matmul that skips the last k: wrong by one product per element
//   test.reversed   matmul summing k backwards: right, but rounded differently
//   test.copy1..3   the naive loops under other names (scores 3e8 > 2e8 > 1e8)
// Checked: a tuned choice is stored and a later compile (fresh memory, the disk
// entry) reuses it without timing anything; a stored choice that is no longer
// a candidate is retuned; wrong candidates are rejected and never chosen, in
// every dtype, for matmul, linear and conv2d, while a merely reordered sum is
// not; the budget bounds what is timed and the reason says what was not;
// symbolic dims tune only with example shapes; tuned and untuned compiles
// never share a cached function.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include "api/autotune.h"
#include "api/autotune_check.h"
#include "api/target.h"
#include "cache_test_util.h"
#include "ir/interpreter.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "passes/lower/test_algorithms.h"
#include "runtime/kernel_cache.h"
#include "runtime/tuning_cache.h"

namespace kiln::test {
namespace {

using ir::Dim;
using passes::AlgorithmCandidate;
using passes::AlgorithmChoice;
namespace lower = passes::lower;
namespace fs = std::filesystem;

std::atomic<bool> zero_on{false}, drop_last_on{false}, reversed_on{false}, copies_on{false};

lower::RootFn naive_root(const std::string& op) {
  for (const lower::AlgorithmLowering& a : lower::lowering_table().at(op).algorithms) {
    if (a.name == "naive") return a.root;
  }
  throw Error("test: " + op + " has no naive candidate");
}

// A 2-D matmul summing k = 0..K-1 (forward), K-1..0 (reversed) or 0..K-2 (drop_last).
enum class Order { Reversed, DropLast };
loop::Stmt matmul_2d(lower::NodeLowering& n, const std::vector<lower::OutBuf>& outs, Order order) {
  using namespace kiln::loop;  // NOLINT
  const lower::Operand& a = n.in(0);
  const lower::Operand& b = n.in(1);
  DType acc_t = lower::accum_dtype(n.out_dtype());
  Expr k_dim = a.dims.back();
  Expr extent = order == Order::DropLast ? k_dim + int64_t(-1) : k_dim;
  return lower::loop_nest(n.ctx, outs[0].dims, [&](const lower::Index& o) {
    lower::Scratch acc = lower::make_scratch(n.ctx, "acc", acc_t);
    Stmt loop = lower::loop_nest(
        n.ctx, {extent},
        [&](const lower::Index& k) {
          Expr kk = order == Order::Reversed ? k_dim + int64_t(-1) - k[0] : k[0];
          return acc.store(acc.load() + lower::cast_to(a.at({o[0], kk}), acc_t) *
                                            lower::cast_to(b.at({kk, o[1]}), acc_t));
        },
        "k");
    return lower::allocate({acc}, Block::make({acc.store(lower::imm(acc_t, 0)), loop,
                                               lower::store_at(outs[0], o, acc.load())}));
  });
}

bool rank2(const ir::Node& n) {
  return n.input(0)->type().rank() == 2 && n.input(1)->type().rank() == 2;
}

lower::AlgorithmLowering candidate(std::string name, const std::atomic<bool>* on, double score,
                                   lower::RootFn root,
                                   std::function<bool(const ir::Node&)> fits = nullptr) {
  lower::AlgorithmLowering a;
  a.name = std::move(name);
  a.targets = {passes::TargetKind::CPU};
  a.applies = [on, fits](const ir::Node& n, const passes::Target&, std::string* why) {
    bool ok = on->load() && (!fits || fits(n));
    if (!ok && why) *why = "switched off (test candidate)";
    return ok;
  };
  a.score = [score](const ir::Node&, const passes::Target&, std::string* why) {
    if (why) *why = "test candidate";
    return score;
  };
  a.root = std::move(root);
  return a;
}

// Registered once, before this binary's first compile (the hook's precondition).
void register_test_candidates() {
  static std::once_flag once;
  std::call_once(once, [] {
    lower::RootFn zero = [](lower::NodeLowering& n, const std::vector<lower::OutBuf>& outs) {
      return lower::store_all(n.ctx, outs[0],
                              [&](const lower::Index&) { return lower::imm(n.out_dtype(), 0); });
    };
    for (const char* op : {"matmul", "linear", "conv2d"}) {
      lower::add_test_algorithm(op, candidate("test.zero", &zero_on, 1e9, zero));
    }
    lower::add_test_algorithm("matmul",
                              candidate(
                                  "test.drop_last", &drop_last_on, 9e8,
                                  [](lower::NodeLowering& n, const std::vector<lower::OutBuf>& o) {
                                    return matmul_2d(n, o, Order::DropLast);
                                  },
                                  rank2));
    lower::add_test_algorithm("matmul",
                              candidate(
                                  "test.reversed", &reversed_on, 8e8,
                                  [](lower::NodeLowering& n, const std::vector<lower::OutBuf>& o) {
                                    return matmul_2d(n, o, Order::Reversed);
                                  },
                                  rank2));
    for (int i = 1; i <= 3; ++i) {
      lower::add_test_algorithm("matmul", candidate("test.copy" + std::to_string(i), &copies_on,
                                                    1e8 * (4 - i), naive_root("matmul")));
    }
  });
}

std::unique_ptr<ir::Graph> matmul_graph(DType t, ir::Dims a, ir::Dims b) {
  auto g = std::make_unique<ir::Graph>("mm");
  ir::Value* x = g->add_input("x", ir::Type::tensor(t, std::move(a)));
  ir::Value* w = g->add_input("w", ir::Type::tensor(t, std::move(b)));
  g->set_outputs({g->apply1("matmul", {x, w})});
  return g;
}

std::vector<Tensor> random_inputs(const ir::Graph& g, const std::vector<Shape>& shapes) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    in.push_back(random_tensor(shapes[i], g.input(i)->type().dtype(), 100 + i));
  }
  return in;
}

void expect_matches_interpreter(const ir::Graph& g, const CompiledFunction& f,
                                const std::vector<Tensor>& in) {
  std::vector<Tensor> want = ir::interpret(g, in);
  std::vector<Tensor> got = f(in);
  ASSERT_EQ(got.size(), want.size());
  double tol = default_rtol(want[0].dtype());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], tol, tol)) << "output " << i;
  }
}

// The groups of `g` with the heuristic's choices, then autotuned.
struct Tuned {
  std::vector<passes::KernelGroup> groups;
  compile_detail::AutotuneReport report;

  const AlgorithmChoice& choice() const {
    for (const passes::KernelGroup& grp : groups) {
      if (!grp.algorithm.name.empty()) return grp.algorithm;
    }
    throw Error("test: no group has an algorithm");
  }
  const AlgorithmCandidate& candidate(const std::string& name) const {
    for (const AlgorithmCandidate& c : choice().candidates) {
      if (c.name == name) return c;
    }
    throw Error("test: no candidate " + name);
  }
};

Tuned tune(const ir::Graph& g, const CompileOptions& o) {
  Tuned t;
  passes::Target target = api::host_target(o.num_threads);
  t.groups = passes::group_kernels(g);
  passes::choose_algorithms(t.groups, target);
  t.report = compile_detail::autotune_groups(g, t.groups, o, default_backend(), target);
  return t;
}

// The key text stored in the one tuning entry under `dir` (what a reader compares).
std::string stored_key_text(const std::string& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir + "/tuning")) entries.push_back(e.path());
  if (entries.size() != 1) throw Error("test: expected one tuning entry");
  std::string bytes = read_all(entries[0].string());
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= uint32_t(static_cast<unsigned char>(bytes[12 + i])) << (8 * i);
  return bytes.substr(64, size);
}

class Autotune : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { register_test_candidates(); }
  void SetUp() override {
    zero_on = drop_last_on = reversed_on = copies_on = false;
    runtime::TuningCache::global().clear_memory();
    runtime::TuningCache::global().reset_stats();
    runtime::KernelCache::global().clear();
  }
  void TearDown() override { zero_on = drop_last_on = reversed_on = copies_on = false; }

  // Tuning on, with a budget no small test spends (sanitizer builds compile slowly).
  static CompileOptions tuning(double budget = 60) {
    CompileOptions o;
    o.autotune = true;
    o.autotune_budget_s = budget;
    return o;
  }

  TempDir dir_;
  ScopedEnv cache_dir_{"KILN_CACHE_DIR", dir_.path().c_str()};
  ScopedEnv cache_on_{"KILN_CACHE", nullptr};
  ScopedEnv autotune_env_{"KILN_AUTOTUNE", nullptr};
};

TEST_F(Autotune, TunedChoiceIsStoredAndReusedWithoutTiming) {
  copies_on = true;
  auto g = matmul_graph(DType::F32, {33, 17}, {17, 9});
  Tuned first = tune(*g, tuning());
  EXPECT_EQ(first.report.contractions, 1);
  EXPECT_EQ(first.report.measured, 1);
  EXPECT_EQ(first.report.from_cache, 0);
  EXPECT_GE(first.report.candidates_timed, 4);  // naive and the three copies at least
  EXPECT_TRUE(first.choice().reason.starts_with("autotuned: ")) << first.choice().reason;
  EXPECT_FALSE(contains(first.choice().reason, "not timed")) << first.choice().reason;
  for (const AlgorithmCandidate& c : first.choice().candidates) {
    if (c.applies) {
      EXPECT_GE(c.seconds, 0) << c.name;
    }
  }
  EXPECT_EQ(runtime::TuningCache::global().stats().disk_writes, 1u);

  // A new process: nothing in memory, the entry on disk.
  runtime::TuningCache::global().clear_memory();
  Tuned second = tune(*g, tuning());
  EXPECT_EQ(second.report.from_cache, 1);
  EXPECT_EQ(second.report.measured, 0);
  EXPECT_EQ(second.report.candidates_timed, 0);  // nothing compiled, run or timed
  EXPECT_EQ(second.choice().name, first.choice().name);
  EXPECT_TRUE(
      second.choice().reason.starts_with("tuning cache: " + first.choice().name + " (measured "))
      << second.choice().reason;
  for (const AlgorithmCandidate& c : first.choice().candidates) {
    EXPECT_EQ(second.candidate(c.name).seconds, c.seconds) << c.name;
  }
  EXPECT_EQ(runtime::TuningCache::global().stats().disk_hits, 1u);

  // The same through compile(): the stored choice is used, nothing is stored anew.
  runtime::TuningCache::global().clear_memory();
  runtime::TuningCache::global().reset_stats();
  CompiledFunction f = compile(*g, tuning());
  EXPECT_TRUE(contains(f.explain(), "(tuning cache: " + first.choice().name)) << f.explain();
  EXPECT_EQ(runtime::TuningCache::global().stats().disk_hits, 1u);
  EXPECT_EQ(runtime::TuningCache::global().stats().stores, 0u);
  expect_matches_interpreter(*g, f, random_inputs(*g, {{33, 17}, {17, 9}}));
}

TEST_F(Autotune, StoredChoiceThatIsNoCandidateIsRetuned) {
  copies_on = true;
  auto g = matmul_graph(DType::F32, {8, 12}, {12, 6});
  tune(*g, tuning());
  std::string key = stored_key_text(dir_.path());
  EXPECT_TRUE(contains(key, "matmul(f32[8, 12], f32[12, 6])")) << key;
  EXPECT_TRUE(contains(key, "test.copy1")) << key;  // the candidate list
  EXPECT_TRUE(contains(key, KILN_VERSION)) << key;

  for (const char* stale : {"test.gone", "test.copy2"}) {
    SCOPED_TRACE(stale);
    // A record whose winner is not registered, or was rejected when measured.
    runtime::TuningRecord forged;
    forged.choice = stale;
    forged.candidates = {{stale, 1e-9, std::string(stale) == "test.copy2"}};
    forged.measured_at = 1;
    forged.budget_s = 60;
    ASSERT_TRUE(runtime::TuningCache::global().store(key, forged));
    runtime::TuningCache::global().clear_memory();
    Tuned t = tune(*g, tuning());
    EXPECT_EQ(t.report.measured, 1);  // measured again (test.copy2 may then win fairly)
    EXPECT_NE(t.choice().name, "test.gone");
    EXPECT_TRUE(t.choice().reason.starts_with("autotuned: ")) << t.choice().reason;
  }
}

TEST_F(Autotune, WrongCandidateIsNeverChosenEvenAsTheTopScore) {
  zero_on = true;
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I32}) {
    SCOPED_TRACE(dtype_name(t));
    auto g = matmul_graph(t, {7, 19}, {19, 5});
    const ir::Node& mm = *g->nodes().back();
    EXPECT_EQ(passes::choose_algorithm(mm, api::host_target()).name, "test.zero");
    Tuned tuned = tune(*g, tuning());
    EXPECT_NE(tuned.choice().name, "test.zero");
    const AlgorithmCandidate& zero = tuned.candidate("test.zero");
    EXPECT_TRUE(zero.rejected);
    EXPECT_TRUE(contains(zero.tuning_note, "max |error|")) << zero.tuning_note;
    EXPECT_TRUE(contains(tuned.choice().reason,
                         "; rejected (output differs from the interpreter, or failed): test.zero"))
        << tuned.choice().reason;
    EXPECT_FALSE(tuned.candidate("naive").rejected);

    CompiledFunction f = compile(*g, tuning());
    expect_matches_interpreter(*g, f, random_inputs(*g, {{7, 19}, {19, 5}}));
    // Stored too: the cached record marks it rejected and does not choose it.
    runtime::TuningCache::global().clear_memory();
    Tuned again = tune(*g, tuning());
    EXPECT_EQ(again.report.from_cache, 1);
    EXPECT_NE(again.choice().name, "test.zero");
    EXPECT_TRUE(again.candidate("test.zero").rejected);
  }
}

TEST_F(Autotune, ToleranceRejectsAMissingTermButNotAReorderedSum) {
  drop_last_on = reversed_on = true;
  struct Case {
    DType dtype;
    int64_t m, k, n;
  };
  for (Case c : {Case{DType::F32, 20, 300, 20}, Case{DType::BF16, 16, 64, 16},
                 Case{DType::F16, 16, 64, 16}, Case{DType::F64, 9, 200, 7}}) {
    SCOPED_TRACE(dtype_name(c.dtype));
    auto g = matmul_graph(c.dtype, {c.m, c.k}, {c.k, c.n});
    Tuned t = tune(*g, tuning());
    EXPECT_TRUE(t.candidate("test.drop_last").rejected);
    EXPECT_FALSE(t.candidate("test.reversed").rejected) << t.candidate("test.reversed").tuning_note;
    EXPECT_GE(t.candidate("test.reversed").seconds, 0);
    EXPECT_NE(t.choice().name, "test.drop_last");
  }
}

TEST_F(Autotune, WrongLinearAndConvCandidatesAreRejected) {
  zero_on = true;
  {
    auto g = std::make_unique<ir::Graph>("lin");
    ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {3, 5, 11}));
    ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {6, 11}));
    ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {6}));
    g->set_outputs({g->apply1("linear", {x, w, b})});
    Tuned t = tune(*g, tuning());
    EXPECT_TRUE(t.candidate("test.zero").rejected);
    EXPECT_NE(t.choice().name, "test.zero");
    CompiledFunction f = compile(*g, tuning());
    expect_matches_interpreter(*g, f, random_inputs(*g, {{3, 5, 11}, {6, 11}, {6}}));
  }
  {
    auto g = std::make_unique<ir::Graph>("conv");
    ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {2, 4, 9, 7}));
    ir::Value* w = g->add_input("w", ir::Type::tensor(DType::F32, {6, 2, 3, 3}));
    ir::Value* b = g->constant(random_tensor({6}, DType::F32, 7));  // a constant operand
    g->set_outputs({g->apply1("conv2d", {x, w, b},
                              {{"stride", std::vector<int64_t>{2, 1}},
                               {"padding", std::vector<int64_t>{1, 1}},
                               {"groups", int64_t{2}}})});
    Tuned t = tune(*g, tuning());
    EXPECT_TRUE(t.candidate("test.zero").rejected);
    EXPECT_NE(t.choice().name, "test.zero");
    CompiledFunction f = compile(*g, tuning());
    expect_matches_interpreter(*g, f, random_inputs(*g, {{2, 4, 9, 7}, {6, 2, 3, 3}}));
  }
}

TEST_F(Autotune, BudgetBoundsWhatIsTimedAndTheReasonSaysSo) {
  copies_on = true;
  auto g = matmul_graph(DType::F32, {16, 16}, {16, 16});
  Tuned tiny = tune(*g, tuning(1e-6));
  // The heuristic's pick is always timed; nothing else fits.
  EXPECT_EQ(tiny.report.candidates_timed, 1);
  EXPECT_GE(tiny.candidate("test.copy1").seconds, 0);
  EXPECT_EQ(tiny.choice().name, "test.copy1");
  for (const char* name : {"test.copy2", "test.copy3", "naive"}) {
    EXPECT_LT(tiny.candidate(name).seconds, 0) << name;
    EXPECT_TRUE(contains(tiny.candidate(name).tuning_note, "not timed (budget 1e-06 s spent)"))
        << tiny.candidate(name).tuning_note;
  }
  const std::string& why = tiny.choice().reason;
  EXPECT_TRUE(contains(why, "; not timed (budget 1e-06 s spent): ")) << why;
  EXPECT_TRUE(contains(why, "test.copy2")) << why;
  EXPECT_TRUE(contains(why, "test.copy3")) << why;
  EXPECT_TRUE(contains(why, "naive")) << why;

  // A larger budget does not settle for the partial record: it measures the rest.
  Tuned full = tune(*g, tuning());
  EXPECT_EQ(full.report.measured, 1);
  EXPECT_GE(full.report.candidates_timed, 4);
  EXPECT_FALSE(contains(full.choice().reason, "not timed")) << full.choice().reason;
  // Complete now: even a tiny budget reuses it.
  Tuned reuse = tune(*g, tuning(1e-6));
  EXPECT_EQ(reuse.report.from_cache, 1);
  EXPECT_EQ(reuse.report.candidates_timed, 0);
}

TEST_F(Autotune, SymbolicDimsTuneOnlyWithExampleShapes) {
  copies_on = true;
  auto g = matmul_graph(DType::F32, {Dim::sym("N"), 6}, {6, 4});
  Tuned plain = tune(*g, tuning());
  EXPECT_EQ(plain.report.kept_heuristic, 1);
  EXPECT_EQ(plain.report.candidates_timed, 0);
  EXPECT_EQ(plain.choice().name, "test.copy1");  // the heuristic's
  EXPECT_TRUE(contains(plain.choice().reason, "; not tuned: symbolic dims N"))
      << plain.choice().reason;

  CompileOptions o = tuning();
  o.example_shapes = {{9, 6}, {6, 4}};
  Tuned tuned = tune(*g, o);
  EXPECT_EQ(tuned.report.measured, 1);
  EXPECT_TRUE(tuned.choice().reason.starts_with("autotuned at N=9: ")) << tuned.choice().reason;
  o.example_shapes = {{10, 6}, {6, 4}};  // another size is another problem
  EXPECT_EQ(tune(*g, o).report.measured, 1);
  o.example_shapes = {{9, 6}, {6, 4}};
  Tuned again = tune(*g, o);
  EXPECT_EQ(again.report.from_cache, 1);
  EXPECT_TRUE(contains(again.choice().reason, ", at N=9)")) << again.choice().reason;

  // One compiled function, tuned at N=9, serves every N.
  CompiledFunction f = compile(*g, o);
  for (int64_t n : {1, 5, 33}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    expect_matches_interpreter(*g, f, random_inputs(*g, {{n, 6}, {6, 4}}));
  }

  auto message = [&](std::vector<std::vector<int64_t>> shapes) {
    CompileOptions bad = tuning();
    bad.example_shapes = std::move(shapes);
    try {
      compile(*g, bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_TRUE(contains(message({{9, 7}, {6, 4}}), "example_shapes[0] [9, 7] does not fit input x"));
  EXPECT_TRUE(contains(message({{9, 6}}), "example_shapes has 1 shapes, @mm takes 2 inputs"));
  EXPECT_TRUE(contains(message({{9}, {6, 4}}), "(rank)"));
}

TEST_F(Autotune, TunedAndUntunedCompilesNeverShareAFunction) {
  zero_on = true;  // the heuristic's choice computes zeros: which one ran shows in the values
  auto g = matmul_graph(DType::F32, {5, 8}, {8, 3});
  std::vector<Tensor> in = random_inputs(*g, {{5, 8}, {8, 3}});
  CompiledFunction plain = compile(*g);
  EXPECT_TRUE(contains(plain.explain(), "algorithm: test.zero (heuristic: ")) << plain.explain();
  EXPECT_TRUE(plain(in)[0].equal(Tensor::zeros({5, 3})));

  CompiledFunction tuned = compile(*g, tuning());
  EXPECT_TRUE(contains(tuned.explain(), "(autotuned: ")) << tuned.explain();
  expect_matches_interpreter(*g, tuned, in);

  {
    ScopedEnv env("KILN_AUTOTUNE", "1");  // the environment turns it on
    CompiledFunction from_env = compile(*g);
    EXPECT_FALSE(contains(from_env.explain(), "heuristic")) << from_env.explain();
    expect_matches_interpreter(*g, from_env, in);
  }
  CompiledFunction plain_again = compile(*g);
  EXPECT_TRUE(plain_again(in)[0].equal(Tensor::zeros({5, 3})));
}

TEST_F(Autotune, ExplainShowsEveryCandidate) {
  zero_on = copies_on = true;
  auto g = matmul_graph(DType::F32, {6, 10}, {10, 4});
  std::string text = compile(*g, tuning()).explain();
  EXPECT_TRUE(contains(text, "    candidate naive: score 0, measured ")) << text;
  EXPECT_TRUE(contains(text, "    candidate test.zero: score 1e+09, rejected (max |error| "))
      << text;
  EXPECT_TRUE(contains(text, "    candidate test.copy1: score 3e+08, measured ")) << text;
  EXPECT_TRUE(contains(text, "    candidate test.drop_last: does not apply - switched off"))
      << text;
  EXPECT_TRUE(contains(text, ", chosen")) << text;
}

TEST_F(Autotune, LargeNodeIsCheckedOnSamplesAndSkipsThePlainLoops) {
  zero_on = true;
  // 512 x 257 x 512 multiply-adds: over the whole-node reference's limit.
  auto g = matmul_graph(DType::F32, {512, 257}, {257, 512});
  ASSERT_GT(compile_detail::multiply_adds(*g->nodes().back()), compile_detail::kFullReferenceMacs);
  Tuned t = tune(*g, tuning());
  EXPECT_TRUE(t.candidate("test.zero").rejected);
  EXPECT_TRUE(contains(t.candidate("test.zero").tuning_note, "sampled elements"))
      << t.candidate("test.zero").tuning_note;
  EXPECT_LT(t.candidate("naive").seconds, 0);  // never run at this size
  EXPECT_TRUE(contains(t.candidate("naive").tuning_note, "not timed (the plain loops"));
  EXPECT_TRUE(contains(t.choice().reason,
                       "not timed (the plain loops are not run on nodes this "
                       "large): naive"))
      << t.choice().reason;
  EXPECT_NE(t.choice().name, "test.zero");
  bool others = false;  // candidates registered beside naive and this test's (gemm.*)
  for (const AlgorithmCandidate& c : t.choice().candidates) {
    others = others || (c.applies && c.name != "naive" && !c.name.starts_with("test."));
  }
  if (others) {
    // A real candidate won, measured and checked on the samples.
    EXPECT_TRUE(t.choice().reason.starts_with("autotuned: ")) << t.choice().reason;
    EXPECT_GE(t.candidate(t.choice().name).seconds, 0);
    return;
  }
  // Every candidate that ran was wrong: the plain loops are used, untimed, and nothing stored.
  EXPECT_EQ(t.choice().name, "naive");
  EXPECT_TRUE(contains(t.choice().reason, "nothing correct was timed")) << t.choice().reason;
  EXPECT_TRUE(contains(t.choice().reason, "naive is used untimed")) << t.choice().reason;
  EXPECT_EQ(runtime::TuningCache::global().stats().stores, 0u);

  zero_on = false;  // naive alone on a large node: nothing worth running
  Tuned alone = tune(*g, tuning());
  EXPECT_TRUE(contains(alone.choice().reason, "not tuned: naive is the only candidate"))
      << alone.choice().reason;
  EXPECT_EQ(alone.report.candidates_timed, 0);
}

// The sampled reference on small nodes (forced by full_macs = 0): the right
// output passes, a wrong last or first element (always sampled) does not.
void expect_sampled_check_works(const ir::Graph& g) {
  std::vector<Tensor> in = compile_detail::tuning_inputs(g);
  std::vector<Tensor> good = ir::interpret(g, in);
  compile_detail::ReferenceCheck r = compile_detail::make_reference(g, in, /*full_macs=*/0);
  EXPECT_TRUE(contains(r.what, "sampled elements")) << r.what;
  EXPECT_EQ(r.check(good), "");
  for (int64_t at : {good[0].numel() - 1, int64_t{0}}) {
    Tensor bad = good[0].clone();
    Tensor flat = bad.view_as_strided({bad.numel()}, {1}, 0);
    std::vector<int64_t> i{at};
    flat.set(i, flat.get(i) + 100);
    EXPECT_NE(r.check({bad}), "") << "element " << at;
  }
  // The whole-node reference agrees on the right output.
  EXPECT_EQ(compile_detail::make_reference(g, in).check(good), "");
}

TEST(SampledReference, MatmulBmmLinearConv) {
  using D = ir::Dims;
  auto one = [](const std::string& op, std::vector<std::pair<DType, D>> ins, ir::Attrs attrs = {},
                const Tensor& constant = Tensor()) {
    auto g = std::make_unique<ir::Graph>("s");
    std::vector<ir::Value*> v;
    for (size_t i = 0; i < ins.size(); ++i) {
      v.push_back(
          g->add_input("in" + std::to_string(i), ir::Type::tensor(ins[i].first, ins[i].second)));
    }
    if (constant.defined()) v.push_back(g->constant(constant));
    if (op == "linear" && v.size() == 2) v.push_back(g->constant(ir::AttrValue{}));
    if (op == "conv2d" && v.size() == 2) v.push_back(g->constant(ir::AttrValue{}));
    g->set_outputs({g->apply1(op, v, attrs)});
    return g;
  };
  const DType f = DType::F32;
  std::vector<std::unique_ptr<ir::Graph>> graphs;
  graphs.push_back(one("matmul", {{f, {40, 30}}, {f, {30, 50}}}));
  graphs.push_back(one("matmul", {{f, {3, 1, 20, 9}}, {f, {4, 9, 18}}}));  // broadcast batch
  graphs.push_back(one("matmul", {{f, {9}}, {f, {3, 9, 20}}}));            // vector @ batch
  graphs.push_back(one("matmul", {{f, {20, 9}}, {f, {9}}}));               // matrix @ vector
  graphs.push_back(one("matmul", {{DType::I32, {17, 5}}, {DType::I32, {5, 19}}}));
  graphs.push_back(one("bmm", {{DType::BF16, {5, 20, 7}}, {DType::BF16, {5, 7, 19}}}));
  graphs.push_back(one("linear", {{f, {2, 20, 11}}, {f, {30, 11}}, {f, {30}}}));
  graphs.push_back(one("linear", {{f, {20, 11}}, {f, {11}}}));
  graphs.push_back(one("conv2d", {{f, {3, 4, 9, 9}}, {f, {20, 2, 3, 3}}},
                       {{"stride", std::vector<int64_t>{2, 2}},
                        {"padding", std::vector<int64_t>{1, 1}},
                        {"groups", int64_t{2}}},
                       random_tensor({20}, f, 9)));  // a constant bias
  graphs.push_back(one("conv2d", {{DType::F64, {2, 18, 7, 7}}, {DType::F64, {18, 1, 3, 3}}},
                       {{"dilation", std::vector<int64_t>{2, 2}}, {"groups", int64_t{18}}}));
  for (const auto& g : graphs) {
    SCOPED_TRACE(ir::print_graph(*g));
    expect_sampled_check_works(*g);
  }
}

TEST(AutotuneOptions, AreChecked) {
  CompileOptions o;
  o.autotune_budget_s = 0;
  auto g = matmul_graph(DType::F32, {2, 2}, {2, 2});
  EXPECT_THROW(compile(*g, o), Error);
  o.autotune_budget_s = 1;
  o.example_shapes = {{-1, 2}, {2, 2}};
  EXPECT_THROW(compile(*g, o), Error);
}

TEST(AutotuneFormat, DurationsReadWell) {
  EXPECT_EQ(compile_detail::format_seconds(12.3e-6), "12.3 us");
  EXPECT_EQ(compile_detail::format_seconds(0.25e-3), "0.250 ms");
  EXPECT_EQ(compile_detail::format_seconds(1.92e-3), "1.92 ms");
  EXPECT_EQ(compile_detail::format_seconds(0.41), "410 ms");
  EXPECT_EQ(compile_detail::format_seconds(2.346), "2.35 s");
}

}  // namespace
}  // namespace kiln::test
