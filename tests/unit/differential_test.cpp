// Differential testing: seeded random graphs (elementwise chains with
// broadcasting and mixed dtypes, reductions, layout ops, a symbolic batch dim)
// compiled once with the default backend and run for several batch sizes,
// compared with ir::interpret. A failure prints the seed, the graph text, the
// inputs' shapes, and whether the loop-IR evaluator agrees with the reference
// (it separates lowering bugs from code generation bugs).
//
// The op mix avoids value-sensitive steps whose result may flip on a 1-ulp
// difference (float -> int casts, division, floor/round), so tolerances can
// stay tight for what remains.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "random_test_util.h"

namespace kiln::test {
namespace {

using ir::Dim;
using Ints = std::vector<int64_t>;

const std::vector<DType> kInputTypes = {DType::F32, DType::F32,  DType::F32, DType::F64,
                                        DType::F16, DType::BF16, DType::I32, DType::I64,
                                        DType::I8,  DType::Bool};

struct Program {
  std::unique_ptr<ir::Graph> g;
  int64_t k = 1;  // the static inner dim
  // Per input: shape with -1 for the symbolic N.
  std::vector<Shape> shapes;
};

Program random_program(uint64_t seed) {
  Gen r(seed);
  Program p;
  p.g = std::make_unique<ir::Graph>("d" + std::to_string(seed));
  ir::Graph& g = *p.g;
  p.k = r.one_of<int64_t>({1, 3, 7, 33});
  const Dim N = Dim::sym("N");
  std::vector<ir::Value*> vals;
  auto add_input = [&](const std::string& name, ir::Dims dims, Shape shape) {
    vals.push_back(g.add_input(name, ir::Type::tensor(r.one_of(kInputTypes), std::move(dims))));
    p.shapes.push_back(std::move(shape));
  };
  add_input("x", {N, p.k}, {-1, p.k});
  switch (r.pick(4)) {
    case 0:
      add_input("y", {p.k}, {p.k});
      break;
    case 1:
      add_input("y", {1, p.k}, {1, p.k});
      break;
    case 2:
      add_input("y", {N, 1}, {-1, 1});
      break;
    default:
      add_input("y", {}, {});
      break;
  }
  if (r.coin()) add_input("z", {N, p.k}, {-1, p.k});

  const std::vector<std::string> unary = {"neg", "abs", "relu", "tanh", "sigmoid", "sin", "exp"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "maximum", "minimum"};
  int steps = 3 + r.pick(6);
  for (int s = 0, tries = 0; s < steps && tries < 50; ++tries) {
    // Operands favour recent values, so chains get deep.
    auto operand = [&]() -> ir::Value* {
      return r.pick(3) ? vals[vals.size() - 1 - size_t(r.pick(std::min<int>(2, int(vals.size()))))]
                       : r.one_of(vals);
    };
    ir::Value* a = operand();
    try {
      ir::Value* out = nullptr;
      switch (r.pick(10)) {
        case 0:
        case 1:
        case 2:
          out = g.apply1(r.one_of(unary), {a});
          break;
        case 3:
        case 4:
        case 5:
          out = g.apply1(r.one_of(binary), {a, operand()});
          break;
        case 6: {
          int64_t rank = a->type().rank();
          if (rank == 0) continue;
          Ints dims{int64_t(r.pick(int(rank)))};
          out = g.apply1(r.one_of<std::string>({"sum", "amax", "mean"}), {a},
                         {{"dim", dims}, {"keepdim", r.coin()}});
          break;
        }
        case 7: {
          // Casts only to floating types or between integers: float -> int would
          // flip on a 1-ulp difference.
          DType from = a->type().dtype();
          DType to = r.one_of<DType>({DType::F32, DType::F64, DType::F16, DType::I64, DType::I32});
          if (is_floating(from) && !is_floating(to)) to = DType::F32;
          out = g.apply1("cast", {a}, {{"dtype", to}});
          break;
        }
        case 8: {
          int64_t rank = a->type().rank();
          if (rank >= 2) {
            out = g.apply1("transpose", {a}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
          } else {
            out = g.apply1("unsqueeze", {a}, {{"dim", int64_t{0}}});
          }
          break;
        }
        default: {
          int64_t rank = a->type().rank();
          if (rank == 0) continue;
          int64_t d = r.pick(int(rank));
          out = g.apply1("slice", {a}, {{"dim", d}, {"start", int64_t{r.pick(2)}}});
          break;
        }
      }
      vals.push_back(out);
      ++s;
    } catch (const Error&) {
      // The op does not take these operands (dtype, broadcast): draw again.
    }
  }
  std::vector<ir::Value*> outs{vals.back()};
  size_t first_node_value = g.inputs().size();
  if (vals.size() > first_node_value + 1 && r.coin()) {
    outs.push_back(
        vals[first_node_value + size_t(r.pick(int(vals.size() - first_node_value - 1)))]);
  }
  g.set_outputs(outs);
  return p;
}

std::vector<Tensor> make_inputs(const Program& p, int64_t n, uint64_t seed, bool transposed) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    Shape s = p.shapes[i];
    for (int64_t& d : s) d = d < 0 ? n : d;
    DType t = p.g->input(i)->type().dtype();
    if (transposed && s.size() == 2) {
      // The same values read through a transposed (non-contiguous) view.
      Tensor base = random_tensor({s[1], s[0]}, t, seed + i);
      in.push_back(base.view_as_strided(s, {1, s[0]}, 0));
    } else {
      in.push_back(random_tensor(s, t, seed + i));
    }
  }
  return in;
}

// Tolerance for float outputs by the least precise float type anywhere in the
// graph: a 1-ulp difference in a bf16 step stays visible in an f32 output.
struct Tol {
  double rtol, atol;
};
Tol graph_tolerance(const ir::Graph& g) {
  auto rank = [](DType t) {
    return t == DType::BF16 ? 0 : t == DType::F16 ? 1 : t == DType::F32 ? 2 : 3;
  };
  int worst = 3;
  auto see = [&](const ir::Value* v) {
    if (v->type().is_tensor() && is_floating(v->type().dtype())) {
      worst = std::min(worst, rank(v->type().dtype()));
    }
  };
  for (const auto& v : g.inputs()) see(v.get());
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) see(v);
  }
  const Tol tols[] = {{6e-2, 6e-2}, {1e-2, 1e-2}, {1e-3, 1e-3}, {1e-9, 1e-9}};
  return tols[worst];
}

::testing::AssertionResult close(const Tensor& got, const Tensor& want, Tol t) {
  if (!is_floating(want.dtype())) return tensors_close(got, want, 0, 0);
  return tensors_close(got, want, t.rtol, t.atol);
}

// Compares `f` with the interpreter on one feed; "" when they agree.
std::string compare(const ir::Graph& g, const CompiledFunction& f, const std::vector<Tensor>& in) {
  std::vector<Tensor> want = ir::interpret(g, in);
  std::vector<Tensor> got;
  try {
    got = f(in);
  } catch (const Error& e) {
    return std::string("run failed: ") + e.what();
  }
  if (got.size() != want.size()) return "output count differs";
  Tol tol = graph_tolerance(g);
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    ::testing::AssertionResult ok = close(got[i], want[i], tol);
    if (!ok) msg += "output " + std::to_string(i) + ": " + ok.message() + "\n";
  }
  return msg;
}

TEST(Differential, RandomGraphsMatchTheInterpreter) {
  const int kCases = 200;
  const auto start = std::chrono::steady_clock::now();
  int compared = 0, failures = 0;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    Program p = random_program(seed);
    std::string text = ir::print_graph(*p.g);
    CompiledFunction f;
    try {
      f = compile(*p.g);
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": compile failed: " << e.what() << "\n" << text;
      ++failures;
      continue;
    }
    for (int64_t n : {1, 7}) {
      for (bool transposed : {false, true}) {
        std::vector<Tensor> in = make_inputs(p, n, seed * 100 + uint64_t(n), transposed);
        std::string diff = compare(*p.g, f, in);
        ++compared;
        if (diff.empty()) continue;
        ++failures;
        CompileOptions eval;
        eval.backend = "loop-eval";
        std::string eval_diff = compare(*p.g, compile(*p.g, eval), in);
        ADD_FAILURE() << "seed " << seed << ", N = " << n
                      << (transposed ? ", transposed inputs" : "") << ", backend " << f.backend()
                      << ":\n"
                      << diff << "loop-eval "
                      << (eval_diff.empty() ? "agrees with the interpreter (codegen bug)"
                                            : "differs too (lowering bug): " + eval_diff)
                      << "\n"
                      << text;
      }
    }
    if (failures > 10) break;  // enough to debug; keep the log readable
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << compared << " runs of " << kCases << " random graphs in " << secs << " s\n";
  EXPECT_LT(secs, 60.0);
}

TEST(Differential, GeneratorIsDeterministicAndVaried) {
  EXPECT_EQ(ir::print_graph(*random_program(42).g), ir::print_graph(*random_program(42).g));
  std::set<std::string> ops;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Program p = random_program(seed);  // named: the graph must outlive the loop
    for (const auto& n : p.g->nodes()) ops.insert(n->op());
  }
  // Every kind of step shows up within 50 seeds.
  for (const char* op : {"sum", "cast", "transpose", "slice", "add", "tanh"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

}  // namespace
}  // namespace kiln::test
