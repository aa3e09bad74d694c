// Tests of the frontend's robustness limits: input nested too deeply for the
// recursive parser and lowering (brackets, operator chains, method chains,
// blocks, inlined calls) is a located kiln::Error, never a stack overflow; an
// error inside an inlined call is reported like any other (the fuzzer found it
// escaping as an internal exception); recursion is rejected by name. Only
// kiln::Error may leave the frontend, so every failure here must not be an
// InternalError.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "frontend/limits.h"
#include "kiln/error.h"

namespace kiln::frontend {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

ArgBinding tensor_arg(const std::string& name) {
  ArgBinding a;
  a.name = name;
  a.tensor = ir::TensorType{DType::F32, {2, 3}, Device::cpu()};
  return a;
}

// Parses and lowers `fn` (default: the last def) with x: f32[2, 3]; returns
// the error message, "ok" on success. An InternalError fails the test.
std::string outcome(const std::string& src, const std::string& fn = "") {
  try {
    auto m = parse_module(src, "t.kiln");
    (void)dump_ast(*m);
    lower_function(*m, fn, {tensor_arg("x")});
  } catch (const InternalError& e) {
    ADD_FAILURE() << "internal error: " << e.what();
    return "internal";
  } catch (const Error& e) {
    return e.what();
  }
  return "ok";
}

// The first line of an error message ("file:line:col: error: ...").
std::string first_line(const std::string& msg) {
  return msg.substr(0, msg.find('\n'));
}

const std::string kTooDeep = "error: expression is nested too deeply (more than 200 levels)";

TEST(FrontendLimits, ErrorInInlinedCallIsReported) {
  // The fuzzer's reproducer: the Abort from g's body escaped lower_function.
  const std::string src =
      "def g(x):\n"
      "    return x + undefined_name\n"
      "\n"
      "def f(x):\n"
      "    y = g(x)\n"
      "    z = x + other\n"
      "    return y\n";
  std::string msg = outcome(src, "f");
  // Both errors: after the failed call the top level goes on with the next statement.
  EXPECT_EQ(msg,
            "t.kiln:2:16: error: unknown name 'undefined_name'\n"
            "    return x + undefined_name\n"
            "               ^~~~~~~~~~~~~~\n"
            "t.kiln:6:13: error: unknown name 'other'\n"
            "    z = x + other\n"
            "            ^~~~~\n"
            "2 errors generated.")
      << msg;
  EXPECT_EQ(first_line(outcome(src, "g")), "t.kiln:2:16: error: unknown name 'undefined_name'");
}

TEST(FrontendLimits, ErrorTwoCallsDownIsReportedOnce) {
  const std::string src =
      "def h(x):\n"
      "    return x @ nope\n"
      "def g(x):\n"
      "    return h(x) + 1\n"
      "def f(x):\n"
      "    a = g(x)\n"
      "    b = g(x)\n"
      "    return a + b\n";
  std::string msg = outcome(src, "f");
  // Both calls fail at the same place in h, which is reported once.
  EXPECT_EQ(msg,
            "t.kiln:2:16: error: unknown name 'nope'\n"
            "    return x @ nope\n"
            "               ^~~~")
      << msg;
}

TEST(FrontendLimits, DeepParenthesesAreAnError) {
  std::string src = "def f(x):\n    return " + repeat("(", 1000) + "x" + repeat(")", 1000) + "\n";
  // The 201st '(' (column 12 + 200) opens one level too many.
  EXPECT_EQ(first_line(outcome(src)), "t.kiln:2:212: " + kTooDeep);
  // 199 are fine (with the return expression's own level, 200) and mean just x.
  EXPECT_EQ(outcome("def f(x):\n    return " + repeat("(", 199) + "x" + repeat(")", 199) + "\n"),
            "ok");
}

TEST(FrontendLimits, DeepListsAreAnError) {
  std::string src = "def f(x):\n    return " + repeat("[", 1000) + "x" + repeat("]", 1000) + "\n";
  EXPECT_EQ(first_line(outcome(src)), "t.kiln:2:212: " + kTooDeep);
}

TEST(FrontendLimits, LongMethodChainIsAnError) {
  std::string src = "def f(x):\n    return x" + repeat(".t()", 1000) + "\n";
  // Each .t() adds an Attribute and a Call level; the error points at the
  // name where the tree grows past the limit.
  std::string msg = first_line(outcome(src));
  EXPECT_EQ(msg, "t.kiln:2:410: " + kTooDeep);
  // A shorter chain lowers: t() twice is the identity.
  EXPECT_EQ(outcome("def f(x):\n    return x" + repeat(".t()", 60) + "\n"), "ok");
}

TEST(FrontendLimits, LongOperatorChainIsAnError) {
  // Left-associative: the parser loops, but the tree is 1000 levels tall.
  std::string src = "def f(x):\n    return x" + repeat(" + x", 1000) + "\n";
  EXPECT_EQ(first_line(outcome(src)), "t.kiln:2:810: " + kTooDeep);
  EXPECT_EQ(outcome("def f(x):\n    return x" + repeat(" + x", 150) + "\n"), "ok");
}

TEST(FrontendLimits, OtherRecursiveExpressionsAreBounded) {
  const std::vector<std::string> deep = {
      repeat("-", 1000) + "x",                         // unary
      repeat("not ", 1000) + "x",                      // not
      repeat("2 ** ", 1000) + "2",                     // right-associative power
      repeat("x if x else ", 1000) + "x",              // conditional expressions
      repeat("abs(", 1000) + "x" + repeat(")", 1000),  // call arguments
      repeat("x[", 1000) + "0" + repeat("]", 1000),    // subscripts
      repeat("{", 1000) + repeat("}", 1000),           // dict literals
  };
  for (const std::string& e : deep) {
    std::string msg = outcome("def f(x):\n    return " + e + "\n");
    EXPECT_NE(msg.find(kTooDeep), std::string::npos) << e.substr(0, 20) << ": " << msg;
    EXPECT_EQ(msg.rfind("t.kiln:2:", 0), 0u) << msg;
  }
}

TEST(FrontendLimits, DeepBlocksAreAnError) {
  std::string src = "def f(x):\n";
  for (int i = 1; i <= 150; ++i) src += std::string(4 * size_t(i), ' ') + "if True:\n";
  src += std::string(4 * 151, ' ') + "return x\n";
  // Line 101 is the 100th nested if; its block (from the ':') would be the 101st.
  std::string msg = first_line(outcome(src));
  EXPECT_EQ(msg, "t.kiln:101:408: error: blocks are nested too deeply (more than 100 levels)")
      << msg;

  std::string chain = "def f(x):\n    if x.dim() == 0:\n        return x\n";
  for (int i = 1; i <= 150; ++i) {
    chain += "    elif x.dim() == " + std::to_string(i) + ":\n        return x\n";
  }
  msg = first_line(outcome(chain));
  EXPECT_NE(msg.find("error: blocks are nested too deeply (more than 100 levels)"),
            std::string::npos)
      << msg;
}

TEST(FrontendLimits, RecursionIsAnError) {
  std::string msg = outcome("def f(x):\n    return f(x)\n");
  EXPECT_EQ(msg,
            "t.kiln:2:12: error: recursive call of 'f': recursion is not supported\n"
            "    return f(x)\n"
            "           ^\n"
            "note: calls are inlined when the script is compiled")
      << msg;
  msg = outcome("def g(x):\n    return f(x) * 2\ndef f(x):\n    return g(x) + 1\n");
  EXPECT_EQ(first_line(msg),
            "t.kiln:2:12: error: recursive call of 'f': recursion is not supported");
}

TEST(FrontendLimits, LongCallChainIsAnError) {
  std::string src;
  for (int i = 0; i < 40; ++i) {
    src += "def f" + std::to_string(i) + "(x):\n    return f" + std::to_string(i + 1) + "(x)\n";
  }
  src += "def f40(x):\n    return x\n";
  std::string msg = first_line(outcome(src, "f0"));
  EXPECT_EQ(msg, "t.kiln:66:12: error: calls are nested too deeply (more than 32 inlined calls)");
}

TEST(FrontendLimits, LoweringDepthIsBoundedAcrossCalls) {
  // Each def is within the parser's limits, but inlining stacks them.
  std::string src;
  for (int i = 0; i < 10; ++i) {
    src += "def f" + std::to_string(i) + "(x):\n    return " + repeat("-", 150) + "f" +
           std::to_string(i + 1) + "(x)\n";
  }
  src += "def f10(x):\n    return x\n";
  std::string msg = first_line(outcome(src, "f0"));
  EXPECT_NE(msg.find("error: nested too deeply: more than 500 levels of expressions, statements "
                     "and inlined calls"),
            std::string::npos)
      << msg;
}

}  // namespace
// --- compile-time ints (scalar_ops.cpp): Python's values, checked against CPython -------------

TEST(CompileTimeInts, MatchPython) {
  // Each holds in CPython 3; Kiln must agree (a wrong value fails the assert).
  const char* checks[] = {
      "round(2.675, 2) == 2.67",
      "round(0.5) == 0",
      "round(1.5) == 2",
      "round(-2.5) == -2",
      "round(1234.5, -2) == 1200.0",
      "round(1250, -2) == 1200",
      "round(1350, -2) == 1400",
      "round(-1250, -2) == -1200",
      "round(5e-324, 400) == 5e-324",
      "round(1.5e300, -301) == 0.0",
      "round(0.285, 2) == 0.28",
      "round(1e15 + 0.5) == 1000000000000000",
      "-7 // 2 == -4",
      "-7 % 2 == 1",
      "7 % -2 == -1",
      "(-2**63) % -1 == 0",
      "-2**63 == -9223372036854775807 - 1",
      "2**63 - 1 + 1 - 1 == 9223372036854775807",
      "1 ** 10**18 == 1",
      "(-1) ** (10**18 + 1) == -1",
      "2 ** -1 == 0.5",
      "-8 >> 100 == -1",
      "8 >> 100 == 0",
      "1 << 62 == 4611686018427387904",
      "1.0 // 0.1 == 9.0",
      "-7.5 % 2 == 0.5",
      "7.5 % -2 == -0.5",
      "int(-2.9) == -2",
      "int(\" -1_000 \") == -1000",
      "math.floor(-0.5) == -1",
      "math.ceil(2.1) == 3",
      "int(2.0**62) == 4611686018427387904",
      "abs(-2**63 + 1) == 2**63 - 1",
      "len(range(-2**63, 2**63 - 1, 2**62)) == 4",
      "len(range(10, 0, -3)) == 4",
      "len([1, 2, 3][1::2**63 - 1]) == 1",
      "3 * [1] == [1, 1, 1]",
      "\"ab\" * 2 == \"abab\"",
      "[0] * -5 == []",
      "~(-2**63) == 2**63 - 1",
  };
  for (const char* c : checks) {
    std::string src = std::string("import math\ndef f(x):\n    assert ") + c + "\n    return x\n";
    EXPECT_EQ(outcome(src), "ok") << c;
  }
}

TEST(CompileTimeInts, OverflowIsALocatedError) {
  const std::pair<const char*, const char*> cases[] = {
      {"2**63", "integer overflow: 2 ** 63 does not fit in int64"},
      {"2**63 - 1 + 1", "integer overflow: 9223372036854775807 + 1 does not fit in int64"},
      {"-(-2**63)", "integer overflow: -(-9223372036854775808) does not fit in int64"},
      {"abs(-2**63)", "integer overflow: abs(-9223372036854775808) does not fit in int64"},
      {"(-2**63) // -1", "integer overflow: -9223372036854775808 // -1 does not fit in int64"},
      {"1 << 100", "integer overflow: 1 << 100 does not fit in int64"},
      {"1 << -1", "negative shift count"},
      {"0 ** -1", "0 cannot be raised to a negative power"},
      {"5 % 0", "integer division or modulo by zero"},
      {"int(1e300)", "integer overflow: int(1e+300) does not fit in int64"},
      {"int(float('nan'))", "cannot convert float NaN to integer"},
      {"round(float('inf'))", "cannot convert float infinity to integer"},
      {"int('9223372036854775808')",
       "integer overflow: int('9223372036854775808') does not fit in int64"},
      {"round(9223372036854775807, -1)",
       "integer overflow: round(9223372036854775807, -1) does not fit in int64"},
  };
  for (const auto& [expr, message] : cases) {
    std::string msg =
        first_line(outcome(std::string("def f(x):\n    y = ") + expr + "\n    return x\n"));
    EXPECT_NE(msg.find("t.kiln:2:"), std::string::npos) << expr << ": " << msg;
    EXPECT_NE(msg.find(std::string("error: ") + message), std::string::npos) << expr << ": " << msg;
  }
}

// --- compile budgets (limits.cpp) ------------------------------------------------------------

// A budget outside [1, 2^62] or not a whole number warns and keeps the default
// (runtime::env_uint), so a typo never becomes 0 or a wrapped value.
TEST(CompileBudgets, InvalidValuesKeepTheDefault) {
  const std::string six = "def f(x):\n    for i in range(6):\n        x = x + 1\n    return x\n";
  for (const char* bad : {"0", "-1", "12k", "4611686018427387905", "99999999999999999999999"}) {
    ::setenv("KILN_MAX_LOOP_ITERATIONS", bad, 1);
    EXPECT_EQ(CompileBudgets::from_env().loop_iterations, 4096) << bad;
    EXPECT_EQ(outcome(six), "ok") << bad;
  }
  ::setenv("KILN_MAX_LOOP_ITERATIONS", "4611686018427387904", 1);
  EXPECT_EQ(CompileBudgets::from_env().loop_iterations, kMaxBudget);
  ::setenv("KILN_MAX_LOOP_ITERATIONS", "5", 1);
  EXPECT_NE(outcome(six).find("(limit: KILN_MAX_LOOP_ITERATIONS=5)"), std::string::npos);
  ::unsetenv("KILN_MAX_LOOP_ITERATIONS");
}

TEST(CompileBudgets, EnvironmentSetsEachBudget) {
  ::setenv("KILN_MAX_UNROLLED_ITERATIONS", "20", 1);
  std::string nested = outcome(
      "def f(x):\n    for i in range(10):\n        for j in range(10):\n            x = x + 1\n"
      "    return x\n");
  ::unsetenv("KILN_MAX_UNROLLED_ITERATIONS");
  EXPECT_NE(nested.find("(limit: KILN_MAX_UNROLLED_ITERATIONS=20)"), std::string::npos) << nested;
  ::setenv("KILN_MAX_GRAPH_NODES", "50", 1);
  std::string nodes =
      outcome("def f(x):\n    for i in range(100):\n        x = x + 1\n    return x\n");
  ::unsetenv("KILN_MAX_GRAPH_NODES");
  EXPECT_NE(nodes.find("(limit: KILN_MAX_GRAPH_NODES=50)"), std::string::npos) << nodes;
  ::setenv("KILN_MAX_SEQUENCE_LENGTH", "10", 1);
  std::string seq = outcome("def f(x):\n    t = [1] * 11\n    return x\n");
  ::unsetenv("KILN_MAX_SEQUENCE_LENGTH");
  EXPECT_NE(seq.find("a sequence of 11 items is too long: more than 10"), std::string::npos) << seq;
  ::setenv("KILN_MAX_LOOP_ITERATIONS", "5", 1);
  std::string loop =
      outcome("def f(x):\n    for i in range(6):\n        x = x + 1\n    return x\n");
  ::unsetenv("KILN_MAX_LOOP_ITERATIONS");
  EXPECT_NE(loop.find("(limit: KILN_MAX_LOOP_ITERATIONS=5)"), std::string::npos) << loop;
  // The defaults allow these.
  EXPECT_EQ(outcome("def f(x):\n    for i in range(100):\n        x = x + 1\n    return x\n"),
            "ok");
}

}  // namespace kiln::frontend
