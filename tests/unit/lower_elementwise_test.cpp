// Lowering of elementwise ops (and arange/full) to loop IR, checked by running
// the lowered kernels with loop_eval against the reference interpreter: dtype
// classes, broadcasting, scalars, odd sizes, non-contiguous views, symbolic
// dims, special values, and multi-op groups lowered as one kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>

#include "lower_test_util.h"
#include "op_test_util.h"

namespace kiln::test {
namespace {

using ir::Attrs;
using ir::AttrValue;

const std::vector<Shape> kShapes = {{7}, {0}, {1}, {33, 31}, {2, 3, 5}};

TEST(LowerElementwise, FloatMathOverDtypes) {
  for (const char* op : {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
                         "sigmoid", "silu", "erf", "reciprocal", "gelu"}) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
      for (const Shape& s : kShapes) {
        SCOPED_TRACE(std::string(op) + " " + dtype_name(t) + " " + shape_str(s));
        compare(op, {random_tensor(s, t, 11)});
      }
    }
  }
  compare("gelu", {random_tensor({33}, DType::F32, 5)}, {{"approximate", std::string("tanh")}});
}

TEST(LowerElementwise, NumericUnaryOverDtypes) {
  for (const char* op : {"neg", "abs", "relu", "floor", "ceil", "round", "sign"}) {
    for (DType t :
         {DType::F32, DType::F64, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64}) {
      SCOPED_TRACE(std::string(op) + " " + dtype_name(t));
      compare(op, {random_tensor({33, 31}, t, 3)});
    }
  }
  compare("sign", {random_tensor({7}, DType::Bool, 1)});
  compare("logical_not", {random_tensor({7}, DType::F32, 1)});
  compare("bitwise_not", {random_tensor({7}, DType::I16, 1)});
  compare("bitwise_not", {random_tensor({7}, DType::Bool, 1)});
}

TEST(LowerElementwise, SpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = make_tensor({8}, {0.5, 1.5, 2.5, -0.5, -2.5, nan, inf, -0.0});
  Tensor y = make_tensor({8}, {1, nan, 0, -1, 3, 2, -inf, 0});
  compare("round", {x});
  compare("relu", {x});
  compare("maximum", {x, y});
  compare("minimum", {x, y});
  compare("clamp", {x, In::c(AttrValue(-1.0)), In::c(AttrValue(1.0))});
  compare("clamp", {x, In::c(AttrValue(2.0)), In::c(AttrValue(1.0))});  // min > max gives max
  compare("clamp", {x, y, In::c(ir::NoneAttr{})});
  compare("neg", {x});
  compare("sign", {x});
  compare("logical_not", {x});
  // float -> int truncates toward zero; NaN -> 0.
  Tensor z = make_tensor({5}, {-1.7, 2.9, nan, -0.2, 100.5});
  for (DType t : {DType::I32, DType::I8, DType::U8, DType::Bool, DType::F16}) {
    compare("cast", {z}, {{"dtype", t}});
  }
  compare("cast", {random_tensor({7}, DType::I64, 2)}, {{"dtype", DType::F16}});
  // Python-sign integer division and remainder.
  Tensor a = make_tensor({6}, {7, -7, 7, -7, 0, 5}, DType::I32);
  Tensor b = make_tensor({6}, {2, 2, -2, -2, 3, -1}, DType::I32);
  compare("div", {a, b}, {{"rounding_mode", std::string("floor")}});
  compare("div", {a, b}, {{"rounding_mode", std::string("trunc")}});
  compare("div", {a, b});
  compare("remainder", {a, b});
  Tensor fa = a.to(DType::F32), fb = b.to(DType::F32);
  compare("div", {fa, fb}, {{"rounding_mode", std::string("floor")}});
  compare("div", {fa, fb}, {{"rounding_mode", std::string("trunc")}});
  compare("remainder", {fa, fb});
}

TEST(LowerElementwise, BinaryOverDtypesAndBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7}, {7}}, {{3, 1, 7}, {5, 1}}, {{1}, {33, 31}}, {{0, 3}, {3}}, {{}, {4}}};
  for (const char* op : {"add", "sub", "mul", "div", "pow", "remainder", "maximum", "minimum"}) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8,
                    DType::I32, DType::I64}) {
      for (const auto& [sa, sb] : shapes) {
        SCOPED_TRACE(std::string(op) + " " + dtype_name(t) + " " + shape_str(sa) + shape_str(sb));
        bool int_divisor = !is_floating(t) && (std::string(op) == "remainder");
        Tensor a = random_tensor(sa, t, 21);
        Tensor b = random_tensor(sb, t, 22, int_divisor);
        if (std::string(op) == "pow" && !is_floating(t)) {
          b = random_tensor(sb, DType::U8, 23).to(t);  // non-negative exponents
        }
        compare(op, {a, b});
      }
    }
  }
  // Mixed dtypes promote; bool arithmetic.
  compare("add", {random_tensor({7}, DType::I32, 1), random_tensor({7}, DType::F16, 2)});
  compare("mul", {random_tensor({7}, DType::U8, 1), random_tensor({7}, DType::I8, 2)});
  compare("add", {random_tensor({7}, DType::Bool, 1), random_tensor({7}, DType::Bool, 2)});
  compare("mul", {random_tensor({7}, DType::Bool, 1), random_tensor({7}, DType::Bool, 2)});
  compare("sub", {random_tensor({7}, DType::F32, 1), random_tensor({7}, DType::F32, 2)},
          {{"alpha", 2.5}});
  compare("add", {random_tensor({7}, DType::I32, 1), random_tensor({7}, DType::I32, 2)},
          {{"alpha", int64_t{3}}});
  compare("div", {random_tensor({7}, DType::I64, 1), random_tensor({7}, DType::I64, 2, true)},
          {{"rounding_mode", std::string("floor")}});
  compare("div", {random_tensor({7}, DType::I8, 1), random_tensor({7}, DType::I8, 2, true)},
          {{"rounding_mode", std::string("trunc")}});
  compare("pow", {random_tensor({7}, DType::I64, 1),
                  make_tensor({7}, {-1, -2, 0, 1, 2, 3, -3}, DType::I64)});
}

TEST(LowerElementwise, ScalarOperands) {
  Tensor x = random_tensor({33}, DType::F32, 4);
  compare("add", {x, In::c(AttrValue(2.5))});
  compare("mul", {In::c(AttrValue(int64_t{3})), random_tensor({7}, DType::I32, 4)});
  compare("div", {random_tensor({7}, DType::I32, 4), In::c(AttrValue(int64_t{2}))});
  compare("mul", {random_tensor({7}, DType::F16, 4), In::c(AttrValue(1.0 / 3.0))});
  compare("add", {random_tensor({7}, DType::BF16, 4), Tensor::scalar(0.1, DType::F32)});
  compare("pow", {x, In::c(AttrValue(2.0))});
  compare("lt", {random_tensor({7}, DType::I32, 4), In::c(AttrValue(0.5))});
  compare("where", {random_tensor({7}, DType::Bool, 4), x.view_as_strided({7}, {1}, 0),
                    In::c(AttrValue(0.0))});
  compare("masked_fill", {random_tensor({3, 7}, DType::F16, 4), random_tensor({7}, DType::Bool, 5),
                          In::c(AttrValue(-1.5))});
  compare("masked_fill", {random_tensor({3, 7}, DType::I32, 4), random_tensor({7}, DType::Bool, 5),
                          In::c(AttrValue(int64_t{-4}))});
  compare("masked_fill", {random_tensor({7}, DType::Bool, 4), random_tensor({7}, DType::Bool, 5),
                          Tensor::scalar(1, DType::Bool)});
}

// The scalar exponents ATen strength-reduces (x*x, x*x*x, sqrt, 1/sqrt, 1/x,
// 1/(x*x)): the lowering and the interpreter compute the same steps, so they
// agree bit for bit, zero signs included (sqrt(-0.0) = -0.0 where pow gives
// +0.0; sqrt(-inf) = nan where pow gives +inf). Other exponents keep pow.
TEST(LowerElementwise, PowSpecialExponents) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto at = [](const Tensor& v, int64_t i) { return v.get(std::vector<int64_t>{i}); };
  const std::vector<double> edge = {-0.0, 0.0, -inf, inf, nan, -2.0, 3.0, 1e-30, -1e30, 0.7};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    Tensor x = make_tensor({int64_t(edge.size())}, edge).to(t);
    Tensor r = random_tensor({1023}, t, 9);
    for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 2.5}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " ** " + std::to_string(e));
      for (const Tensor& in : {x, r}) {
        Built b = build("pow", {in, In::c(AttrValue(e))}, {});
        Tensor want = ir::interpret(*b.g, b.feed)[0].to(DType::F64);
        Tensor got = run_lowered(*b.g, b.feed)[0].to(DType::F64);
        const double tol = e == 2.5 ? default_rtol(t) : 0;  // pow itself may differ by an ulp
        for (int64_t i = 0; i < in.numel(); ++i) {
          double w = at(want, i), g = at(got, i);
          bool same = (std::isnan(w) && std::isnan(g)) ||
                      (w == g && std::signbit(w) == std::signbit(g)) ||
                      (std::isfinite(w) && std::fabs(w - g) <= tol * std::fabs(w));
          EXPECT_TRUE(same) << "[" << i << "] " << at(in.to(DType::F64), i) << ": got " << g
                            << ", interpreter " << w;
        }
      }
    }
  }
  // The edge cases themselves, as PyTorch's CPU kernels give them for f32.
  Built b = build("pow", {make_tensor({3}, {-0.0, -inf, 4.0}), In::c(AttrValue(0.5))}, {});
  Tensor y = ir::interpret(*b.g, b.feed)[0].to(DType::F64);
  EXPECT_TRUE(std::signbit(at(y, 0)) && at(y, 0) == 0);
  EXPECT_TRUE(std::isnan(at(y, 1)));
  EXPECT_EQ(at(y, 2), 2.0);
  // An integer exponent of an integer tensor stays integral; a float one promotes.
  compare("pow", {random_tensor({7}, DType::I32, 3), In::c(AttrValue(int64_t{3}))}, {}, 0, 0);
  compare("pow", {random_tensor({7}, DType::U8, 3).to(DType::I64), In::c(AttrValue(0.5))}, {}, 0,
          0);
  compare("pow", {random_tensor({0}, DType::F32, 3), In::c(AttrValue(3.0))}, {}, 0, 0);
}

TEST(LowerElementwise, CompareLogicalBitwiseSelect) {
  for (const char* op :
       {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}) {
    for (DType t : {DType::F32, DType::F16, DType::I8, DType::U8, DType::I64, DType::Bool}) {
      SCOPED_TRACE(std::string(op) + " " + dtype_name(t));
      compare(op, {random_tensor({5, 7}, t, 8), random_tensor({7}, t, 9)});
    }
  }
  compare("lt", {random_tensor({7}, DType::I32, 1), random_tensor({7}, DType::F32, 2)});
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool}) {
      compare(op, {random_tensor({5, 7}, t, 8), random_tensor({7}, t, 9)});
    }
  }
  for (DType t : {DType::F32, DType::I16, DType::Bool}) {
    compare("where", {random_tensor({5, 1}, DType::Bool, 1), random_tensor({7}, t, 2),
                      random_tensor({5, 7}, t, 3)});
  }
  compare("where", {random_tensor({7}, DType::Bool, 1), random_tensor({7}, DType::I32, 2),
                    random_tensor({7}, DType::F16, 3)});
  compare("clamp", {random_tensor({5, 7}, DType::I32, 1), random_tensor({7}, DType::I32, 2),
                    random_tensor({5, 1}, DType::I32, 3)});
  compare("clamp",
          {random_tensor({7}, DType::I32, 1), In::c(ir::NoneAttr{}), In::c(AttrValue(1.5))});
}

TEST(LowerElementwise, FactoriesLowerToIndexExpressions) {
  compare("arange", {}, {{"end", int64_t{10}}});
  compare("arange", {}, {{"start", 1.5}, {"end", 4.0}, {"step", 0.5}});
  compare(
      "arange", {},
      {{"start", int64_t{5}}, {"end", int64_t{-3}}, {"step", int64_t{-2}}, {"dtype", DType::F16}});
  compare("full", {}, {{"size", std::vector<int64_t>{3, 4}}, {"value", 2.5}});
  compare("full", {},
          {{"size", std::vector<int64_t>{2}}, {"value", int64_t{7}}, {"dtype", DType::I8}});
}

TEST(LowerElementwise, NonContiguousInputsAreReadThroughStrides) {
  Tensor base = random_tensor({6, 8}, DType::F32, 31);
  Tensor transposed = base.view_as_strided({8, 6}, {1, 8}, 0);
  Tensor sliced = base.view_as_strided({3, 4}, {16, 2}, 9);    // base[1::2, 1::2], storage offset 9
  Tensor broadcast = base.view_as_strided({8, 6}, {0, 1}, 6);  // a row repeated
  compare("add", {transposed, broadcast});
  compare("exp", {sliced});
  compare("mul", {sliced, random_tensor({4}, DType::F32, 1)});
  // The strides are scalar parameters of the kernel, named after the buffer.
  Built b = build("exp", {sliced}, {});
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> ks = passes::lower_graph(*b.g, {}, &plans);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(loop::to_string(ks[0]),
            "kernel t_0_exp(in0: f32*, v0: f32*, in0_s0: i64, in0_s1: i64) {\n"
            "  for (i0, 0, 3) {\n"
            "    for (i1, 0, 4) {\n"
            "      v0[((i0 * 4) + i1)] = exp(in0[((i0 * in0_s0) + (i1 * in0_s1))])\n"
            "    }\n"
            "  }\n"
            "}\n");
  ASSERT_EQ(plans[0].scalars.size(), 2u);
  EXPECT_EQ(plans[0].scalars[1].role, passes::ScalarRole::Stride);
  EXPECT_EQ(plans[0].scalars[1].dim, 1);
}

TEST(LowerElementwise, SymbolicDimsAreKernelParameters) {
  auto g = std::make_unique<ir::Graph>("sym");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 3}));
  ir::Value* y = g->add_input("y", ir::Type::tensor(DType::F32, {3}));
  g->set_outputs({g->apply1("mul", {x, y})});
  std::vector<passes::KernelPlan> plans;
  passes::LowerOptions contiguous;
  contiguous.strided_inputs = false;
  std::vector<loop::Kernel> ks = passes::lower_graph(*g, contiguous, &plans);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(loop::to_string(ks[0]),
            "kernel sym_0_mul(x: f32*, y: f32*, v0: f32*, N: i64) {\n"
            "  for (i0, 0, N) {\n"
            "    for (i1, 0, 3) {\n"
            "      v0[((i0 * 3) + i1)] = (x[((i0 * 3) + i1)] * y[i1])\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(loop::to_string(plans[0].buffers[2].shape[0]), "N");
  for (int64_t n : {2, 5, 0}) {
    std::vector<Tensor> in{random_tensor({n, 3}, DType::F32, uint64_t(n)),
                           random_tensor({3}, DType::F32, 9)};
    std::vector<Tensor> out = run_kernels(*g, ks, plans, in);
    EXPECT_TRUE(tensors_close(out[0], ir::interpret(*g, in)[0], 1e-6, 1e-6)) << "N = " << n;
  }
}

TEST(LowerElementwise, MultiOpGroupIsOneKernel) {
  auto g = std::make_unique<ir::Graph>("fused");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {ir::Dim::sym("N"), 7}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {7}));
  ir::Value* s = g->add_input("s", ir::Type::tensor(DType::F16, {1}));
  ir::Value* t0 = g->apply1("add", {x, b});
  ir::Value* t1 = g->apply1("mul", {t0, s});
  ir::Value* t2 = g->apply1("transpose", {t1}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ir::Value* t3 = g->apply1("relu", {t2});
  ir::Value* t4 = g->apply1("exp", {t0});  // a second output sharing t0
  g->set_outputs({t3, t4});
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  passes::LoweredKernel k = passes::lower_group(*g, nodes, "fused");
  // Only the inputs and the two graph outputs are buffers: t0, t1, t2 are inlined.
  std::vector<std::string> roles;
  for (const passes::BufferParam& p : k.plan.buffers) {
    roles.push_back(p.buf->name + ":" + passes::buffer_role_name(p.role));
  }
  EXPECT_EQ(roles,
            (std::vector<std::string>{"x:input", "b:input", "s:input", "v3:output", "v4:output"}));
  for (int64_t n : {1, 6}) {
    std::vector<Tensor> in{random_tensor({n, 7}, DType::F32, 1), random_tensor({7}, DType::F32, 2),
                           random_tensor({1}, DType::F16, 3)};
    std::vector<Tensor> got = run_kernels(*g, {k.kernel}, {k.plan}, in);
    std::vector<Tensor> want = ir::interpret(*g, in);
    // Op by op, each result is rounded to f32 once; inlined they still are (f32 math).
    EXPECT_TRUE(tensors_close(got[0], want[0], 1e-5, 1e-6));
    EXPECT_TRUE(tensors_close(got[1], want[1], 1e-5, 1e-6));
  }
}

TEST(LowerElementwise, UnknownOpIsAUserError) {
  auto g = std::make_unique<ir::Graph>("bad");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {2}));
  ir::Node* n = g->add_node("no_such_op", {x}, {}, {ir::Type::tensor(DType::F32, {2})});
  g->set_outputs({n->output()});
  try {
    passes::lower_graph(*g);
    FAIL() << "expected kiln::Error";
  } catch (const InternalError&) {
    FAIL() << "internal error for a user mistake";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_op"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::test
