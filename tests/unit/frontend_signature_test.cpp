// The op table's signature text: defaults of every kind parse to typed
// values, list defaults keep their commas, and malformed text (a list
// default split at its comma, an int beyond int64, a stray word) is a
// kiln::Error naming the signature, never an uncaught std::invalid_argument.
// Also: out-of-range number literals in scripts are located errors.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/frontend.h"
#include "frontend/op_signature.h"
#include "kiln/error.h"

namespace kiln::frontend {
namespace {

std::string error_of(const std::string& sig) {
  try {
    parse_signature(sig);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Signature, ScalarDefaults) {
  auto p = parse_signature("input, dim=-1, eps=1e-5, *, keepdim=False, mode='mean', out=None");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_FALSE(p[0].has_default);
  EXPECT_EQ(p[1].default_value.kind, Val::Kind::Int);
  EXPECT_EQ(p[1].default_value.i, -1);
  EXPECT_EQ(p[2].default_value.kind, Val::Kind::Float);
  EXPECT_DOUBLE_EQ(p[2].default_value.f, 1e-5);
  EXPECT_FALSE(p[2].kw_only);
  EXPECT_TRUE(p[3].kw_only);
  EXPECT_EQ(p[3].default_value.kind, Val::Kind::Bool);
  EXPECT_EQ(p[4].default_value.s, "mean");
  EXPECT_EQ(p[5].default_value.kind, Val::Kind::None);
}

TEST(Signature, ListAndTupleDefaultsKeepTheirCommas) {
  auto p = parse_signature("input, dims=[0, 1], size=(2,), scale=[1.5, -inf], empty=[], x=3");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[1].name, "dims");
  EXPECT_EQ(p[1].default_value.kind, Val::Kind::List);
  ASSERT_EQ(p[1].default_value.items.size(), 2u);
  EXPECT_EQ(p[1].default_value.items[1].i, 1);
  EXPECT_EQ(p[2].default_value.kind, Val::Kind::Tuple);
  ASSERT_EQ(p[2].default_value.items.size(), 1u);
  EXPECT_EQ(p[2].default_value.items[0].i, 2);
  ASSERT_EQ(p[3].default_value.items.size(), 2u);
  EXPECT_DOUBLE_EQ(p[3].default_value.items[0].f, 1.5);
  EXPECT_TRUE(std::isinf(p[3].default_value.items[1].f));
  EXPECT_TRUE(p[4].default_value.items.empty());
  EXPECT_EQ(p[5].default_value.i, 3);
}

TEST(Signature, VarargsMakeTheRestKeywordOnly) {
  auto p = parse_signature("input, *shape, dtype=None");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(p[1].varargs);
  EXPECT_TRUE(p[2].kw_only);
}

TEST(Signature, MalformedDefaultsAreErrorsNotCrashes) {
  // Each of these threw std::invalid_argument or std::out_of_range from
  // std::stoll/std::stod before.
  EXPECT_EQ(error_of("input, dim=abc"),
            "op signature 'input, dim=abc': parameter 'dim': invalid default value 'abc' "
            "(expected None, True, False, an int in int64 range, a float, a quoted string, or "
            "a list or tuple of these)");
  EXPECT_NE(error_of("input, n=99999999999999999999")
                .find("parameter 'n': invalid default value "
                      "'99999999999999999999'"),
            std::string::npos);
  EXPECT_NE(error_of("input, x=1e999").find("invalid default value '1e999'"), std::string::npos);
  EXPECT_NE(error_of("input, dims=[0, 1").find("unclosed bracket"), std::string::npos);
  EXPECT_NE(error_of("input, dims=0, 1]").find("unbalanced ']'"), std::string::npos);
  EXPECT_NE(error_of("input, dims=[0,, 1]").find("empty element"), std::string::npos);
  EXPECT_NE(error_of("input, dims=[a]").find("invalid default value 'a'"), std::string::npos);
  EXPECT_NE(error_of("input, =3").find("a parameter has no name"), std::string::npos);
  EXPECT_NE(error_of("input, s='abc").find("unclosed bracket or quote"), std::string::npos);
}

std::string lower_error(const std::string& src) {
  try {
    auto m = parse_module(src, "t.kiln");
    ArgBinding a;
    a.name = "x";
    a.tensor = ir::TensorType{DType::F32, {3}, Device::cpu()};
    lower_function(*m, "", {a});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Signature, OutOfRangeScriptLiteralsAreLocatedErrors) {
  std::string msg = lower_error("def f(x):\n    return x + 99999999999999999999\n");
  EXPECT_NE(msg.find("t.kiln:2:16: error: integer literal '99999999999999999999' is too large"),
            std::string::npos)
      << msg;
  msg = lower_error("def f(x):\n    return x.sum(dim=99999999999999999999)\n");
  EXPECT_NE(msg.find("t.kiln:2:22: error: integer literal"), std::string::npos) << msg;
  // float() of a string out of double's range is inf or 0.0, as in Python
  // (std::stod threw std::out_of_range there).
  EXPECT_EQ(lower_error("def f(x):\n    return x * float('1e999') + float(' -1e-400\\n')\n"),
            "no error");
  msg = lower_error("def f(x):\n    return x * float('0x1p3')\n");
  EXPECT_NE(msg.find("could not convert string to float: '0x1p3'"), std::string::npos) << msg;
  msg = lower_error("def f(x):\n    return x * int('99999999999999999999')\n");
  EXPECT_NE(msg.find("t.kiln:2:20: error: integer overflow"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::frontend
