// PyTorch's type promotion: a table test of ir::result_type(), the dtypes the
// elementwise ops infer from it, and a few conformance cases (seeded inputs and
// PyTorch's outputs under $KILN_SHARED_DIR/conformance) run through the op
// references, checking dtypes exactly and values within the case tolerance.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "ir/ops/ops.h"
#include "conformance_corpus.h"
#include "op_test_util.h"

namespace kiln {
namespace {

using ir::Type;
using test::Arg;
using test::run_op1;

Type tensor(DType t) {
  return Type::tensor(t, {2, 3});
}
Type zero_dim(DType t) {
  return Type::tensor(t, {});
}

struct PromotionCase {
  const char* what;
  std::vector<Type> operands;
  DType want;
};

TEST(ResultType, Table) {
  const Type i = Type::int_(), f = Type::float_(), b = Type::bool_();
  const std::vector<PromotionCase> cases = {
      // Same group: promote_types.
      {"i32 + f32", {tensor(DType::I32), tensor(DType::F32)}, DType::F32},
      {"u8 + i8", {tensor(DType::U8), tensor(DType::I8)}, DType::I16},
      {"i16 * bool", {tensor(DType::I16), tensor(DType::Bool)}, DType::I16},
      {"bool + bool", {tensor(DType::Bool), tensor(DType::Bool)}, DType::Bool},
      {"f16 + f32", {tensor(DType::F16), tensor(DType::F32)}, DType::F32},
      {"f16 + bf16", {tensor(DType::F16), tensor(DType::BF16)}, DType::F32},
      {"i64 + f16", {tensor(DType::I64), tensor(DType::F16)}, DType::F16},
      {"u8 + i64", {tensor(DType::U8), tensor(DType::I64)}, DType::I64},
      // Scalars (wrapped numbers) only count when they lift the category.
      {"i32 tensor + float", {tensor(DType::I32), f}, DType::F32},
      {"i32 tensor * int", {tensor(DType::I32), i}, DType::I32},
      {"f16 tensor * float", {tensor(DType::F16), f}, DType::F16},
      {"u8 tensor * int", {tensor(DType::U8), i}, DType::U8},
      {"bool tensor + int", {tensor(DType::Bool), i}, DType::I64},
      {"bool tensor + float", {tensor(DType::Bool), f}, DType::F32},
      {"u8 tensor + bool", {tensor(DType::U8), b}, DType::U8},
      {"f64 tensor + float", {tensor(DType::F64), f}, DType::F64},
      // 0-dim tensors rank between dimensioned tensors and scalars.
      {"0-dim f64 * f32 tensor", {zero_dim(DType::F64), tensor(DType::F32)}, DType::F32},
      {"0-dim f32 + i32 tensor", {zero_dim(DType::F32), tensor(DType::I32)}, DType::F32},
      {"0-dim f64 + i32 tensor", {zero_dim(DType::F64), tensor(DType::I32)}, DType::F64},
      {"0-dim i64 + i8 tensor", {zero_dim(DType::I64), tensor(DType::I8)}, DType::I8},
      {"0-dim i32 + bool tensor", {zero_dim(DType::I32), tensor(DType::Bool)}, DType::I32},
      {"bf16 tensor + 0-dim f64", {tensor(DType::BF16), zero_dim(DType::F64)}, DType::BF16},
      {"0-dim f64 * int", {zero_dim(DType::F64), i}, DType::F64},
      {"0-dim i32 + int", {zero_dim(DType::I32), i}, DType::I32},
      {"0-dim i64 + float", {zero_dim(DType::I64), f}, DType::F32},
      {"0-dim f16 + 0-dim f64", {zero_dim(DType::F16), zero_dim(DType::F64)}, DType::F64},
      {"i32 tensor, 0-dim f16, float", {tensor(DType::I32), zero_dim(DType::F16), f}, DType::F16},
      // Scalars alone: int -> i64, float -> default f32, bool -> bool.
      {"int", {i}, DType::I64},
      {"float", {f}, DType::F32},
      {"bool", {b}, DType::Bool},
      {"int + float", {i, f}, DType::F32},
      {"bool + int", {b, i}, DType::I64},
  };
  for (const PromotionCase& c : cases) {
    EXPECT_EQ(ir::result_type(c.operands), c.want)
        << c.what << ": got " << dtype_name(ir::result_type(c.operands)) << ", want "
        << dtype_name(c.want);
  }
}

struct InferCase {
  const char* op;
  std::vector<Type> operands;
  ir::Attrs attrs;
  DType want;
};

TEST(ResultType, InferredOpDTypes) {
  const Type i = Type::int_(), f = Type::float_(), none = Type::none();
  const std::vector<InferCase> cases = {
      {"add", {tensor(DType::I32), f}, {}, DType::F32},
      {"add", {tensor(DType::Bool), i}, {}, DType::I64},
      {"add", {tensor(DType::Bool), tensor(DType::Bool)}, {}, DType::Bool},
      {"mul", {tensor(DType::F16), f}, {}, DType::F16},
      {"mul", {zero_dim(DType::F64), tensor(DType::F32)}, {}, DType::F32},
      {"mul", {tensor(DType::U8), i}, {}, DType::U8},
      {"mul", {tensor(DType::I16), tensor(DType::Bool)}, {}, DType::I16},
      {"sub", {f, tensor(DType::I64)}, {}, DType::F32},
      {"div", {tensor(DType::I32), tensor(DType::I32)}, {}, DType::F32},
      {"div", {tensor(DType::Bool), i}, {}, DType::F32},
      {"div", {tensor(DType::F64), i}, {}, DType::F64},
      {"div", {tensor(DType::I32), i}, {{"rounding_mode", std::string("floor")}}, DType::I32},
      {"div", {tensor(DType::I32), f}, {{"rounding_mode", std::string("trunc")}}, DType::F32},
      {"pow", {tensor(DType::I32), i}, {}, DType::I32},
      {"pow", {tensor(DType::I32), f}, {}, DType::F32},
      {"pow", {f, tensor(DType::I64)}, {}, DType::F32},
      {"pow", {i, tensor(DType::U8)}, {}, DType::U8},
      {"remainder", {tensor(DType::I32), i}, {}, DType::I32},
      {"maximum", {tensor(DType::I32), tensor(DType::F16)}, {}, DType::F16},
      {"eq", {tensor(DType::I64), f}, {}, DType::Bool},
      {"logical_xor", {tensor(DType::F32), tensor(DType::I8)}, {}, DType::Bool},
      {"bitwise_and", {tensor(DType::Bool), i}, {}, DType::I64},
      {"bitwise_or", {tensor(DType::U8), tensor(DType::I8)}, {}, DType::I16},
      {"where", {tensor(DType::Bool), tensor(DType::I32), f}, {}, DType::F32},
      {"where", {tensor(DType::Bool), f, f}, {}, DType::F32},
      {"where", {tensor(DType::Bool), tensor(DType::F16), zero_dim(DType::F64)}, {}, DType::F16},
      {"clamp", {tensor(DType::I32), f, none}, {}, DType::F32},
      {"clamp", {tensor(DType::I32), i, i}, {}, DType::I32},
      {"clamp", {tensor(DType::F16), none, tensor(DType::F32)}, {}, DType::F32},
      {"masked_fill", {tensor(DType::I32), tensor(DType::Bool), f}, {}, DType::I32},
      {"abs", {tensor(DType::U8)}, {}, DType::U8},
      {"exp", {tensor(DType::I64)}, {}, DType::F32},
      {"sigmoid", {tensor(DType::F16)}, {}, DType::F16},
      {"sqrt", {tensor(DType::Bool)}, {}, DType::F32},
      {"sign", {tensor(DType::Bool)}, {}, DType::Bool},
  };
  for (const InferCase& c : cases) {
    const ir::OpDef& d = test::op_def(c.op);
    std::vector<Type> out = ir::infer_types(d, c.operands, ir::complete_attrs(d, c.attrs));
    ASSERT_EQ(out.size(), 1u) << c.op;
    std::string operands;
    for (const Type& t : c.operands) operands += t.str() + " ";
    EXPECT_EQ(out[0].dtype(), c.want)
        << c.op << "(" << operands << "): got " << dtype_name(out[0].dtype()) << ", want "
        << dtype_name(c.want);
  }
}

// --- against PyTorch's outputs ---------------------------------------------------------

std::filesystem::path case_dir(const std::string& id) {
  return test::conformance_dir() / "cases" / id;
}

// Compares like the conformance runner: dtype and shape exactly, integers and
// bools exactly, floats within atol + rtol * |want| (NaN where NaN is expected).
void expect_matches(const Tensor& got, const Tensor& want, double rtol, double atol,
                    const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what << ": got " << dtype_name(got.dtype());
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  std::vector<double> g = test::values_of(got), w = test::values_of(want);
  bool exact = !is_floating(want.dtype());
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(w[k])) {
      EXPECT_TRUE(std::isnan(g[k])) << what << " element " << k;
    } else if (exact || std::isinf(w[k])) {
      EXPECT_EQ(g[k], w[k]) << what << " element " << k;
    } else {
      EXPECT_LE(std::fabs(g[k] - w[k]), atol + rtol * std::fabs(w[k]))
          << what << " element " << k << ": got " << g[k] << ", want " << w[k];
    }
  }
}

// Skipped without the corpus; with it, a missing case fails.
class AgainstPyTorch : public ::testing::Test {
 protected:
  void SetUp() override { KILN_SKIP_WITHOUT_CORPUS(); }
  bool load(const std::string& id) {
    dir_ = case_dir(id);
    return std::filesystem::exists(dir_);
  }
  Tensor input(const std::string& name) const {
    return read_npy((dir_ / ("input_" + name + ".npy")).string());
  }
  Tensor output(int k) const {
    return read_npy((dir_ / ("output_" + std::to_string(k) + ".npy")).string());
  }
  std::filesystem::path dir_;
};

TEST_F(AgainstPyTorch, IntFloatMix) {
  ASSERT_TRUE(load("tp_int_float_mix")) << "no case at " << dir_;
  // i + x, i * 2, i * 2.5, u + s, u * 2
  Tensor i = input("i"), x = input("x"), u = input("u"), s = input("s");
  expect_matches(run_op1("add", {i, x}), output(0), 1e-4, 1e-5, "i + x");
  expect_matches(run_op1("mul", {i, Arg::i(2)}), output(1), 0, 0, "i * 2");
  expect_matches(run_op1("mul", {i, Arg::f(2.5)}), output(2), 1e-4, 1e-5, "i * 2.5");
  expect_matches(run_op1("add", {u, s}), output(3), 0, 0, "u + s");
  expect_matches(run_op1("mul", {u, Arg::i(2)}), output(4), 0, 0, "u * 2");
}

TEST_F(AgainstPyTorch, ZeroDimPriority) {
  ASSERT_TRUE(load("tp_zero_dim_priority")) << "no case at " << dir_;
  Tensor x = input("x"), i = input("i"), s64 = input("s64"), v64 = input("v64"), sf = input("sf");
  expect_matches(run_op1("mul", {x, s64}), output(0), 1e-4, 1e-5, "x * s64");
  Tensor x0 = x.view_as_strided({x.size(1)}, {x.stride(1)}, x.storage_offset());  // x[0]
  expect_matches(run_op1("add", {x0, v64}), output(1), 1e-4, 1e-5, "x[0] + v64");
  expect_matches(run_op1("add", {i, sf}), output(2), 1e-4, 1e-5, "i + sf");
  expect_matches(run_op1("mul", {s64, Arg::i(2)}), output(3), 1e-4, 1e-5, "s64 * 2");
}

TEST_F(AgainstPyTorch, IntDivision) {
  ASSERT_TRUE(load("tp_int_division")) << "no case at " << dir_;
  Tensor a = input("a"), b = input("b");
  expect_matches(run_op1("div", {a, b}), output(0), 1e-4, 1e-5, "a / b");
  expect_matches(run_op1("div", {a, b}, {{"rounding_mode", std::string("trunc")}}), output(1), 0, 0,
                 "trunc");
  expect_matches(run_op1("div", {a, b}, {{"rounding_mode", std::string("floor")}}), output(2), 0, 0,
                 "floor");
}

TEST_F(AgainstPyTorch, HalfFloatMix) {
  ASSERT_TRUE(load("tp_half_float_mix")) << "no case at " << dir_;
  Tensor h = input("h"), x = input("x");
  expect_matches(run_op1("add", {h, x}), output(0), 1e-2, 1e-3, "h + x");
  expect_matches(run_op1("mul", {h, Arg::f(2.5)}), output(1), 1e-2, 1e-3, "h * 2.5");
  Tensor hf = run_op1("cast", {h}, {{"dtype", DType::F32}});
  expect_matches(run_op1("sub", {hf, x}), output(2), 1e-2, 1e-3, "h.float() - x");
}

TEST_F(AgainstPyTorch, BoolArith) {
  ASSERT_TRUE(load("tp_bool_arith")) << "no case at " << dir_;
  // m + 1, m * x, (m.sum() is a reduction), i * m
  Tensor m = input("m"), x = input("x"), i = input("i");
  expect_matches(run_op1("add", {m, Arg::i(1)}), output(0), 0, 0, "m + 1");
  expect_matches(run_op1("mul", {m, x}), output(1), 1e-4, 1e-5, "m * x");
  expect_matches(run_op1("mul", {i, m}), output(3), 0, 0, "i * m");
}

TEST_F(AgainstPyTorch, Int32FloorDivAndRemainder) {
  ASSERT_TRUE(load("ew_int32_arith")) << "no case at " << dir_;
  // s = a * 3 + b - 7; q = s // b; r = s % b
  Tensor a = input("a"), b = input("b");
  Tensor s = run_op1("sub", {run_op1("add", {run_op1("mul", {a, Arg::i(3)}), b}), Arg::i(7)});
  expect_matches(s, output(0), 0, 0, "s");
  expect_matches(run_op1("div", {s, b}, {{"rounding_mode", std::string("floor")}}), output(1), 0, 0,
                 "s // b");
  expect_matches(run_op1("remainder", {s, b}), output(2), 0, 0, "s % b");
}

TEST_F(AgainstPyTorch, SignAndRounding) {
  ASSERT_TRUE(load("un_sign_and_rounding")) << "no case at " << dir_;
  Tensor x = input("x");
  const char* ops[] = {"abs", "neg", "sign", "floor", "ceil", "round"};
  for (int k = 0; k < 6; ++k) expect_matches(run_op1(ops[k], {x}), output(k), 0, 0, ops[k]);
}

TEST_F(AgainstPyTorch, GeluAndWhere) {
  ASSERT_TRUE(load("un_gelu_exact_and_tanh")) << "no case at " << dir_;
  Tensor x = input("x");
  expect_matches(run_op1("gelu", {x}), output(0), 5e-4, 5e-5, "gelu");
  expect_matches(run_op1("gelu", {x}, {{"approximate", std::string("tanh")}}), output(1), 5e-4,
                 5e-5, "gelu tanh");

  ASSERT_TRUE(load("cmp_where_select"));
  // a = where(x > y, x, y * 0.5); b = where(x < 0.0, 0.0, x)
  Tensor cx = input("x"), cy = input("y");
  Tensor a = run_op1("where", {run_op1("gt", {cx, cy}), cx, run_op1("mul", {cy, Arg::f(0.5)})});
  expect_matches(a, output(0), 1e-4, 1e-5, "where a");
  Tensor b = run_op1("where", {run_op1("lt", {cx, Arg::f(0.0)}), Arg::f(0.0), cx});
  expect_matches(b, output(1), 1e-4, 1e-5, "where b");
}

TEST_F(AgainstPyTorch, PowForms) {
  ASSERT_TRUE(load("un_pow_forms")) << "no case at " << dir_;
  // x ** 2, pow(x, 3), p ** 0.5, pow(p, q), 2.0 ** q
  Tensor x = input("x"), p = input("p"), q = input("q");
  expect_matches(run_op1("pow", {x, Arg::i(2)}), output(0), 5e-4, 5e-5, "x ** 2");
  expect_matches(run_op1("pow", {x, Arg::i(3)}), output(1), 5e-4, 5e-5, "x ** 3");
  expect_matches(run_op1("pow", {p, Arg::f(0.5)}), output(2), 5e-4, 5e-5, "p ** 0.5");
  expect_matches(run_op1("pow", {p, q}), output(3), 5e-4, 5e-5, "p ** q");
  expect_matches(run_op1("pow", {Arg::f(2.0), q}), output(4), 5e-4, 5e-5, "2.0 ** q");
}

}  // namespace
}  // namespace kiln
