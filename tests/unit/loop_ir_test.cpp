// Loop IR: validating make(), printing, structural equality/hash, mutator
// sharing, substitution and the simplifier's rules.
#include <gtest/gtest.h>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::loop {
namespace {

Expr var(const char* name) { return Var::make(i64_t(), name); }
Expr f32(double v) { return FloatImm::make({DType::F32, 1}, v); }

TEST(LoopIR, MakeValidates) {
  EXPECT_THROW(Binary::make(BinOp::Add, make_int(1), f32(1)), InternalError);
  EXPECT_THROW(IntImm::make({DType::F32, 1}, 3), InternalError);
  EXPECT_THROW(Ramp::make(make_int(0), make_int(1), 1), InternalError);
  EXPECT_THROW(For::make(var("i"), make_int(0), var("n"), ForKind::Vectorized, Barrier::make()),
               InternalError);
  Buf y = make_buf("y", DType::F32);
  EXPECT_THROW(Store::make(y, make_int(0), make_int(1)), InternalError);  // i64 into f32
  EXPECT_THROW(Select::make(make_int(1), f32(1), f32(2)), InternalError);  // non-bool cond
}

TEST(LoopIR, PrintsLoopNest) {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr i = var("i");
  Stmt body = Store::make(y, i, Load::make(x, i) * f32(2));
  Stmt loop = For::make(i, make_int(0), var("n"), ForKind::Parallel, body);
  EXPECT_EQ(to_string(loop), "for (i, 0, n) parallel {\n  y[i] = (x[i] * 2.0f)\n}\n");
  Kernel k{"scale", {x, y}, {var("n")}, loop};
  EXPECT_EQ(to_string(k),
            "kernel scale(x: f32*, y: f32*, n: i64) {\n  for (i, 0, n) parallel {\n"
            "    y[i] = (x[i] * 2.0f)\n  }\n}\n");
  Expr v = Load::make(x, Ramp::make(i * 8, make_int(1), 8));
  EXPECT_EQ(to_string(v), "x[ramp((i * 8), 1, 8)]");
  EXPECT_EQ(v.type(), (VType{DType::F32, 8}));
}

TEST(LoopIR, StructuralEqualityAndHash) {
  Buf x = make_buf("x", DType::F32);
  Expr a = Load::make(x, var("i") + make_int(1)) + f32(0.5);
  Expr b = Load::make(x, var("i") + make_int(1)) + f32(0.5);
  Expr c = Load::make(x, var("j") + make_int(1)) + f32(0.5);
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_FALSE(equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));
  EXPECT_FALSE(equal(f32(0.0), f32(-0.0)));  // bit patterns differ
}

TEST(LoopIR, MutatorKeepsUnchangedNodes) {
  Expr e = (var("i") * 4 + var("j")) * var("k");
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(e).same_as(e));
  Expr s = substitute(e, "j", make_int(3));
  EXPECT_EQ(to_string(s), "(((i * 4) + 3) * k)");
  EXPECT_TRUE(substitute(e, "zzz", make_int(3)).same_as(e));
}

TEST(Simplify, ConstantFoldingAndIdentities) {
  EXPECT_EQ(to_string(simplify(make_int(3) + make_int(4) * make_int(5))), "23");
  EXPECT_EQ(to_string(simplify(var("x") + make_int(0))), "x");
  EXPECT_EQ(to_string(simplify(var("x") * make_int(1))), "x");
  EXPECT_EQ(to_string(simplify(var("x") * make_int(0))), "0");
  EXPECT_EQ(to_string(simplify(make_int(2) + var("x"))), "(x + 2)");
  EXPECT_EQ(to_string(simplify((var("x") + make_int(2)) + make_int(3))), "(x + 5)");
  EXPECT_EQ(to_string(simplify(var("x") - var("x"))), "0");
  EXPECT_EQ(to_string(simplify(var("x") / make_int(1))), "x");
  EXPECT_EQ(to_string(simplify(var("x") % make_int(1))), "0");
  // Floor semantics for integer division and modulo.
  EXPECT_EQ(to_string(simplify(make_int(-7) / make_int(2))), "-4");
  EXPECT_EQ(to_string(simplify(make_int(-7) % make_int(2))), "1");
  // f32 folding rounds to f32.
  Expr third = simplify(f32(1.0) / f32(3.0));
  ASSERT_TRUE(third.as<FloatImm>());
  EXPECT_EQ(third.as<FloatImm>()->value, double(1.0f / 3.0f));
  // x * 0.0 is not 0 for floats (NaN, inf), so it stays.
  Expr fx = Var::make({DType::F32, 1}, "fx");
  EXPECT_EQ(to_string(simplify(fx * f32(0))), "(fx * 0.0f)");
}

TEST(Simplify, UsesLoopBounds) {
  BoundsMap b{{"j", {0, 7}}, {"i", {0, 99}}};
  Expr idx = var("i") * 8 + var("j");
  EXPECT_EQ(to_string(simplify(idx / make_int(8), b)), "i");
  EXPECT_EQ(to_string(simplify(idx % make_int(8), b)), "j");
  EXPECT_EQ(to_string(simplify(var("j") / make_int(8), b)), "0");
  EXPECT_EQ(to_string(simplify(min(var("j"), make_int(10)), b)), "j");
  EXPECT_EQ(to_string(simplify(max(var("j"), make_int(7)), b)), "7");
  EXPECT_EQ(to_string(simplify(var("j") < make_int(8), b)), "true");
  EXPECT_EQ(to_string(simplify(var("i") < make_int(50), b)), "(i < 50)");
  // Without bounds nothing is assumed.
  EXPECT_EQ(to_string(simplify(var("j") / make_int(8))), "(j / 8)");
}

TEST(Simplify, RowAndColumnRepackIntoTheFlatIndex) {
  // A flat pixel index p split into [p / 56, p % 56] and packed again.
  Expr p = var("p");
  EXPECT_EQ(to_string(simplify((p / make_int(56)) * make_int(56) + p % make_int(56))), "p");
  Expr offset = var("c") * 3136 + (p / make_int(56)) * make_int(56) + p % make_int(56);
  EXPECT_EQ(to_string(simplify(offset)), "((c * 3136) + p)");
  // Only with the same divisor and dividend.
  EXPECT_EQ(to_string(simplify((p / make_int(56)) * make_int(56) + p % make_int(28))),
            "(((p / 56) * 56) + (p % 28))");
}

TEST(Simplify, LoopsAndBranches) {
  Buf y = make_buf("y", DType::I64);
  Expr i = var("i"), j = var("j");
  // The inner bound j < 4 is provable from the loop, so the if disappears.
  Stmt inner = For::make(j, make_int(0), make_int(4), ForKind::Serial,
                         IfThenElse::make(j < make_int(4), Store::make(y, i * 4 + j, j)));
  Stmt outer = For::make(i, make_int(0), make_int(1), ForKind::Serial, inner);
  EXPECT_EQ(to_string(simplify(outer)), "for (j, 0, 4) {\n  y[j] = j\n}\n");
  Stmt empty = For::make(i, make_int(0), make_int(0), ForKind::Serial, Store::make(y, i, i));
  EXPECT_EQ(to_string(simplify(empty)), "");
}

TEST(Simplify, VectorRampAndBroadcast) {
  Expr r = Ramp::make(var("i"), make_int(1), 8) + Broadcast::make(make_int(3), 8);
  EXPECT_EQ(to_string(simplify(r)), "ramp((i + 3), 1, 8)");
  Expr m = Ramp::make(var("i"), make_int(1), 4) * Broadcast::make(make_int(2), 4);
  EXPECT_EQ(to_string(simplify(m)), "ramp((i * 2), 2, 4)");
}

}  // namespace
}  // namespace kiln::loop
