// Epilogues inside the generated GEMMs, tested directly (the fusion pass that
// makes such groups is separate): a matmul / linear root gets an OutBuf whose
// epilogue adds a bias, applies relu, casts to f16 into another buffer and
// counts its own runs per element, so each candidate must call store_at
// exactly once per element with the final value (after the last K block), and
// never touch the root's own buffer. Also drives generate_gemm (gemm.h)
// directly, the way a convolution lowering does: operands and the output as
// arbitrary index functions.
#include "gemm_test_util.h"
#include "passes/lower/cpu/gemm.h"
#include "passes/lower/lower_internal.h"

namespace kiln::test {
namespace {

using namespace kiln::loop;  // NOLINT
using ir::Dim;
using ir::Type;
namespace lower = passes::lower;

Tensor rnd(const Shape& s, uint64_t seed, DType t = DType::F32) {
  return random_tensor(s, t, seed);
}

// A packed input buffer of the kernel as an Operand (what lower_graph builds).
lower::Operand input_operand(lower::LowerContext& ctx, const ir::Value* v,
                             const std::string& name) {
  std::vector<Expr> dims = ctx.dims(v->type().dims());
  int i = ctx.add_buffer(v, passes::BufferRole::Input, name, v->type().dtype(), dims, false);
  Buf buf = ctx.buffers()[size_t(i)].buf;
  std::vector<Expr> strides = lower::packed_strides(dims);
  return lower::tensor_operand(
      v->type().dtype(), dims,
      [buf, strides](const lower::Index& idx) {
        return Load::make(buf, lower::offset_of(idx, strides));
      },
      v->type());
}

struct EpilogueCase {
  std::string op;  // matmul or linear
  int64_t M, N, K;
  bool symbolic_m = false;
  bool tiny_caches = false;  // K split into blocks: partial sums in scratch
};

// Runs every applicable algorithm of the case's node with the epilogue
//   out16[m, n] = f16(relu(v + ep_bias[n])),  count[m, n] += 1
// and checks both against the interpreter's product.
void check_epilogue(const EpilogueCase& c) {
  SCOPED_TRACE(c.op + " " + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
               std::to_string(c.K));
  const bool linear = c.op == "linear";
  ir::Graph g("ep");
  Dim m_dim = c.symbolic_m ? Dim::sym("M") : Dim(c.M);
  ir::Value* x = g.add_input("x", Type::tensor(DType::F32, {m_dim, c.K}));
  ir::Value* w =
      g.add_input("w", Type::tensor(DType::F32, linear ? ir::Dims{c.N, c.K} : ir::Dims{c.K, c.N}));
  ir::Value* bias = linear ? g.add_input("bias", Type::tensor(DType::F32, {c.N})) : nullptr;
  std::vector<ir::Value*> ins = {x, w};
  if (linear) ins.push_back(bias);
  ir::Value* out = g.apply1(c.op, ins);
  g.set_outputs({out});
  std::vector<Tensor> feed = {rnd({c.M, c.K}, 1),
                              rnd(linear ? Shape{c.N, c.K} : Shape{c.K, c.N}, 2)};
  if (linear) feed.push_back(rnd({c.N}, 3));
  Tensor ep_bias = rnd({c.N}, 4);
  Tensor product = ir::interpret(g, feed)[0];  // linear's own bias included

  passes::Target target =
      passes::Target::for_cpu(c.tiny_caches ? tiny_cache_target() : api::host_cpu_target());
  const lower::OpLowering& l = lower::lowering_table().at(c.op);
  for (const std::string& name : passes::applicable_algorithms(*out->producer(), target)) {
    SCOPED_TRACE("algorithm " + name);
    passes::LowerOptions o;
    o.target = target;
    lower::LowerContext ctx(o);
    lower::NodeLowering nl{*out->producer(), {}, ctx};
    nl.inputs.push_back(input_operand(ctx, x, "x"));
    nl.inputs.push_back(input_operand(ctx, w, "w"));
    if (linear) nl.inputs.push_back(input_operand(ctx, bias, "bias"));
    Buf ep_b = make_buf("ep_bias", DType::F32), out16 = make_buf("out16", DType::F16);
    Buf count = make_buf("count", DType::I32);
    std::vector<Expr> dims = ctx.dims(out->type().dims());
    lower::OutBuf ob(
        make_buf("product_unused", DType::F32), dims, [&](const lower::Index& idx, const Expr& v) {
          Expr flat = lower::flat_index(idx, dims);
          Expr y = max(v + Load::make(ep_b, idx.back()), make_zero(v.type()));
          return Block::make(
              {Store::make(out16, flat, Cast::make({DType::F16, 1}, y)),
               Store::make(count, flat,
                           Load::make(count, flat) + IntImm::make({DType::I32, 1}, 1))});
        });
    const lower::AlgorithmLowering* algo = nullptr;
    for (const lower::AlgorithmLowering& a : l.algorithms) {
      if (a.name == name) algo = &a;
    }
    ASSERT_NE(algo, nullptr);
    Kernel k;
    k.name = "ep_" + std::to_string(reinterpret_cast<uintptr_t>(algo) % 100000);
    k.body = algo->root(nl, {ob});
    for (const passes::BufferParam& b : ctx.buffers()) k.buffers.push_back(b.buf);
    k.buffers.insert(k.buffers.end(), {ep_b, out16, count});
    for (const passes::ScalarParam& s : ctx.scalars()) k.scalars.push_back(s.var);
    k = passes::default_schedule(k, ir::OpCategory::Contraction, passes::ScheduleTarget{});
    k.body = simplify(k.body);
    std::unique_ptr<Compiled> compiled;
    try {
      compiled = std::make_unique<Compiled>(k, Exec::Llvm);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\n" << to_string(k);
      continue;
    }
    Launch launch;
    launch.buffers = feed;
    Tensor got16 = Tensor::zeros({c.M, c.N}, DType::F16);
    Tensor runs = Tensor::zeros({c.M, c.N}, DType::I32);
    launch.buffers.insert(launch.buffers.end(), {ep_bias, got16, runs});
    for (const passes::ScalarParam& s : ctx.scalars()) {
      ASSERT_EQ(s.role, passes::ScalarRole::SymbolicDim);
      launch.scalars.push_back(c.M);
    }
    compiled->run(launch);
    Tensor want = Tensor::zeros({c.M, c.N}, DType::F32);
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) {
        std::vector<int64_t> ij{i, j}, jj{j};
        want.set(ij, std::max(0.0, product.get(ij) + ep_bias.get(jj)));
      }
    }
    Tensor ones = Tensor::zeros({c.M, c.N}, DType::I32);
    for (int64_t i = 0; i < c.M; ++i) {
      for (int64_t j = 0; j < c.N; ++j) ones.set_int(std::vector<int64_t>{i, j}, 1);
    }
    EXPECT_TRUE(tensors_close(runs, ones, 0, 0)) << "epilogue runs per element";
    EXPECT_TRUE(tensors_close(got16, want.to(DType::F16), 4e-3, gemm_atol(DType::F16, c.K)));
  }
}

TEST(GemmEpilogue, MatmulBiasReluCastRunsOncePerElement) {
  check_epilogue({"matmul", 17, 50, 33});
  check_epilogue({"matmul", 255, 100, 300});
  check_epilogue({"matmul", 255, 100, 700, false, true});  // K blocks: partials in scratch
  check_epilogue({"matmul", 1, 70, 300});
  check_epilogue({"matmul", 70, 1, 300});
  check_epilogue({"matmul", 130, 97, 1000, true});
}

TEST(GemmEpilogue, LinearBiasComesBeforeTheEpilogue) {
  check_epilogue({"linear", 17, 50, 33});
  check_epilogue({"linear", 200, 64, 300});
  check_epilogue({"linear", 1, 64, 300});
  check_epilogue({"linear", 33, 100, 257, true});
  check_epilogue({"linear", 33, 100, 600, true, true});
}

// generate_gemm as a convolution lowering uses it: A read transposed from a
// [K, M] buffer, B computed from two buffers (an inlined elementwise
// producer), C stored transposed with an offset, symbolic M.
TEST(GemmEpilogue, GeneratorOverIndexFunctions) {
  const int64_t K = 300, N = 70;
  for (std::string name : {"packed", "small"}) {
    SCOPED_TRACE(name);
    passes::LowerOptions o;
    o.target = api::host_target();
    lower::LowerContext ctx(o);
    Expr M = Var::make(i64_t(), "M");
    Buf at = make_buf("at", DType::F32), b1 = make_buf("b1", DType::F32),
        b2 = make_buf("b2", DType::F32), ct = make_buf("ct", DType::F32);
    lower::GemmSpec s;
    s.M = M, s.N = make_int(N), s.K = make_int(K);
    s.a = [&](const lower::Index&, const Expr& m, const Expr& k) {
      return Load::make(at, k * M + m);
    };
    s.b = [&](const lower::Index&, const Expr& k, const Expr& n) {
      Expr i = k * make_int(N) + n;
      return Load::make(b1, i) - Load::make(b2, i);
    };
    s.a_contiguous_m = true;
    s.store = [&](const lower::Index&, const Expr& m, const Expr& n, const Expr& v) {
      return Store::make(ct, n * M + m + make_int(5), v);
    };
    Kernel k;
    k.name = "gen_" + name;
    k.buffers = {at, b1, b2, ct};
    k.scalars = {M};
    k.body = lower::generate_gemm(
        ctx, s, name == "packed" ? lower::GemmAlgorithm::Packed : lower::GemmAlgorithm::Small,
        o.target.cpu);
    Compiled c(k, Exec::Llvm);
    for (int64_t m : {1, 17, 300}) {
      Tensor ta = rnd({K, m}, 1), tb1 = rnd({K, N}, 2), tb2 = rnd({K, N}, 3);
      Tensor tc = Tensor::zeros({N * m + 5}, DType::F32);
      Launch l;
      l.buffers = {ta, tb1, tb2, tc};
      l.scalars = {m};
      c.run(l);
      for (int64_t i = 0; i < m; i += 7) {
        for (int64_t j = 0; j < N; j += 3) {
          double want = 0;
          for (int64_t kk = 0; kk < K; ++kk) {
            std::vector<int64_t> ak{kk, i}, bk{kk, j};
            want += ta.get(ak) * (tb1.get(bk) - tb2.get(bk));
          }
          std::vector<int64_t> ci{j * m + i + 5};
          EXPECT_NEAR(tc.get(ci), want, gemm_atol(DType::F32, K)) << i << ", " << j;
        }
      }
      std::vector<int64_t> first{0};
      EXPECT_EQ(tc.get(first), 0.0) << "nothing stored before the offset";
    }
  }
}

}  // namespace
}  // namespace kiln::test
