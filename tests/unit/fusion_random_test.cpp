// Seeded random graphs that target fusion: values shared by several readers,
// several outputs, broadcasting ([N, K] with [K], [N, 1] and scalars),
// reductions over the rows feeding elementwise work (and reductions over the
// columns, which must not fuse by rows), matmuls whose results take
// elementwise epilogues or are read with broadcasting, and layout ops between
// them. Each graph is compiled with fusion on and off; both must match the
// interpreter, fusion must never add kernels, and the groups must cover every
// node. A failure prints the seed and the graph.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "lower_test_util.h"
#include "random_test_util.h"
#include "passes/fuse.h"

namespace kiln::test {
namespace {

using ir::Dim;
using Ints = std::vector<int64_t>;

struct Program {
  std::unique_ptr<ir::Graph> g;
  std::vector<Shape> shapes;  // per input; -1 stands for N
  DType dtype = DType::F32;
};

Program random_program(uint64_t seed) {
  Gen r(seed);
  Program p;
  p.g = std::make_unique<ir::Graph>("f" + std::to_string(seed));
  ir::Graph& g = *p.g;
  p.dtype = r.pick(4) == 0 ? DType::F64 : DType::F32;
  const int64_t k = r.one_of<int64_t>({1, 3, 8, 17});
  const Dim N = Dim::sym("N");
  std::vector<ir::Value*> vals;
  auto input = [&](const std::string& name, ir::Dims dims, Shape shape) {
    ir::Value* v = g.add_input(name, ir::Type::tensor(p.dtype, std::move(dims)));
    p.shapes.push_back(std::move(shape));
    return v;
  };
  vals.push_back(input("x", {N, k}, {-1, k}));
  if (r.coin()) vals.push_back(input("y", {N, k}, {-1, k}));
  ir::Value* row = input("b", {k}, {k});
  vals.push_back(row);
  ir::Value* w = input("w", {k, k}, {k, k});
  ir::Value* wcol = input("v", {k, 1}, {k, 1});

  const std::vector<std::string> unary = {"neg", "abs", "relu", "tanh", "sigmoid", "exp", "sin"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "maximum"};
  const int steps = 4 + r.pick(8);
  for (int s = 0, tries = 0; s < steps && tries < 80; ++tries) {
    // Recent values most often, any value (a shared producer) sometimes.
    auto operand = [&]() -> ir::Value* {
      return r.pick(3) ? vals[vals.size() - 1 - size_t(r.pick(std::min<int>(3, int(vals.size()))))]
                       : r.one_of(vals);
    };
    ir::Value* a = operand();
    const int64_t rank = a->type().rank();
    try {
      ir::Value* out = nullptr;
      switch (r.pick(12)) {
        case 0:
        case 1:
          out = g.apply1(r.one_of(unary), {a});
          break;
        case 2:
        case 3:
          out = g.apply1(r.one_of(binary), {a, operand()});
          break;
        case 4:
          out = g.apply1(r.one_of(binary), {a, r.coin() ? row : g.constant(0.5)});
          break;
        case 5:  // a reduction over the rows, kept for broadcasting back
        case 6: {
          if (rank != 2) continue;
          out = g.apply1(r.one_of<std::string>({"sum", "amax", "mean"}), {a},
                         {{"dim", Ints{-1}}, {"keepdim", r.pick(4) != 0}});
          break;
        }
        case 7: {  // over the columns: needed whole before any row
          if (rank != 2) continue;
          out = g.apply1(r.one_of<std::string>({"sum", "amax"}), {a},
                         {{"dim", Ints{0}}, {"keepdim", r.coin()}});
          break;
        }
        case 8:  // a matmul whose result takes epilogues
        case 9: {
          if (rank != 2 || a->type().dims()[1] != Dim(k)) continue;
          switch (r.pick(3)) {
            case 0:
              out = g.apply1("matmul", {a, w});
              break;
            case 1:  // a layout producer, recomputed as indexing
              out = g.apply1(
                  "matmul",
                  {a, g.apply1("transpose", {w}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}})});
              break;
            default:
              out = g.apply1("matmul", {a, wcol});
              break;
          }
          break;
        }
        case 10: {  // layout
          if (rank != 2) continue;
          if (a->type().dims()[1] == Dim(1)) {
            out = g.apply1("squeeze", {a}, {{"dim", Ints{1}}});
          } else {
            out = g.apply1("slice", {a}, {{"dim", int64_t{1}}, {"start", int64_t{r.pick(2)}}});
          }
          break;
        }
        default: {
          if (rank != 2) continue;
          out = g.apply1("transpose", {a}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
          out = g.apply1("transpose", {g.apply1("relu", {out})},
                         {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
          break;
        }
      }
      vals.push_back(out);
      ++s;
    } catch (const Error&) {
      // The op does not take these operands (shapes): draw again.
    }
  }
  // The last value and up to two earlier ones are returned.
  std::vector<ir::Value*> outs{vals.back()};
  const size_t first = g.inputs().size();
  for (int extra = r.pick(3); extra > 0 && vals.size() > first + 1; --extra) {
    ir::Value* v = vals[first + size_t(r.pick(int(vals.size() - first - 1)))];
    if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
  }
  g.set_outputs(outs);
  return p;
}

std::vector<Tensor> make_inputs(const Program& p, int64_t n, uint64_t seed) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    Shape s = p.shapes[i];
    for (int64_t& d : s) d = d < 0 ? n : d;
    in.push_back(random_tensor(s, p.dtype, seed + i));
  }
  return in;
}

std::string compare(const ir::Graph& g, const CompiledFunction& f, const std::vector<Tensor>& in,
                    double tol) {
  std::vector<Tensor> want = ir::interpret(g, in);
  std::vector<Tensor> got;
  try {
    got = f(in);
  } catch (const Error& e) {
    return std::string("run failed: ") + e.what();
  }
  if (got.size() != want.size()) return "output count differs";
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    ::testing::AssertionResult ok = tensors_close(got[i], want[i], tol, tol);
    if (!ok) msg += "output " + std::to_string(i) + ": " + ok.message() + "\n";
  }
  return msg;
}

// Every node but constants is computed by exactly one group or recomputed
// by at least one: a layout node, or a cheap op over graph inputs and
// constants (never an expensive one: those are stored once).
std::string coverage(const ir::Graph& g, const std::vector<passes::KernelGroup>& groups) {
  std::map<const ir::Node*, int> owned, recomputed;
  for (const passes::KernelGroup& grp : groups) {
    for (const ir::Node* n : grp.nodes) ++owned[n];
    for (const ir::Node* n : grp.recomputed) ++recomputed[n];
  }
  for (const auto& n : g.nodes()) {
    if (n->op() == "constant") continue;
    int o = owned[n.get()], rc = recomputed[n.get()];
    bool layout = n->def() && n->def()->category == ir::OpCategory::Layout;
    bool recomputable = layout || passes::cheap_to_recompute(*n);
    if (o > 1 || (o == 0 && !(recomputable && rc > 0))) {
      return n->op() + " is in " + std::to_string(o) + " groups and recomputed by " +
             std::to_string(rc);
    }
  }
  return "";
}

TEST(FusionRandom, FusedGraphsMatchTheInterpreter) {
  const int kCases = 100;
  const auto start = std::chrono::steady_clock::now();
  int failures = 0, fused_kernels = 0, unfused_kernels = 0, multi = 0;
  for (uint64_t seed = 1; seed <= kCases && failures <= 10; ++seed) {
    Program p = random_program(seed);
    std::string text = ir::print_graph(*p.g);
    const double tol = p.dtype == DType::F64 ? 1e-9 : 2e-4;
    CompiledFunction fused, unfused;
    try {
      fused = compile(*p.g);
      CompileOptions o;
      o.fuse = false;
      unfused = compile(*p.g, o);
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": compile failed: " << e.what() << "\n" << text;
      ++failures;
      continue;
    }
    std::string cov = coverage(*p.g, passes::group_kernels(*p.g));
    if (!cov.empty()) {
      ADD_FAILURE() << "seed " << seed << ": " << cov << "\n" << text;
      ++failures;
    }
    EXPECT_LE(fused.num_kernels(), unfused.num_kernels()) << "seed " << seed << "\n" << text;
    fused_kernels += fused.num_kernels();
    unfused_kernels += unfused.num_kernels();
    multi += p.g->outputs().size() > 1;
    for (int64_t n : {1, 6}) {
      std::vector<Tensor> in = make_inputs(p, n, seed * 10 + uint64_t(n));
      for (const CompiledFunction* f : {&fused, &unfused}) {
        std::string diff = compare(*p.g, *f, in, tol);
        if (diff.empty()) continue;
        ++failures;
        ADD_FAILURE() << "seed " << seed << ", N = " << n << (f == &fused ? ", fused" : ", unfused")
                      << ":\n"
                      << diff << text << f->explain() << f->dump("loops");
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << kCases << " graphs (" << multi << " with several outputs): " << fused_kernels
            << " kernels fused, " << unfused_kernels << " unfused, in " << secs << " s\n";
  EXPECT_LT(fused_kernels, unfused_kernels / 2);  // fusion does happen
}

TEST(FusionRandom, GeneratorCoversTheFusionCases) {
  std::set<std::string> ops;
  int epilogues = 0, rows = 0, recomputed = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Program p = random_program(seed);
    for (const auto& n : p.g->nodes()) ops.insert(n->op());
    for (const passes::KernelGroup& grp : passes::group_kernels(*p.g)) {
      epilogues += grp.reason.find("epilogue of") != std::string::npos;
      rows += grp.reason.find("consumer of the rows") != std::string::npos;
      recomputed += !grp.recomputed.empty();
    }
  }
  for (const char* op : {"matmul", "sum", "amax", "transpose", "slice", "add", "exp"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
  EXPECT_GT(epilogues, 5);
  EXPECT_GT(rows, 5);
  EXPECT_GT(recomputed, 0);
}

}  // namespace
}  // namespace kiln::test
