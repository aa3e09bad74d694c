// Tests of the script parser: AST dumps (precedence, calls, slices, blocks),
// function signatures through frontend::functions(), and syntax diagnostics
// with exact file:line:col and caret lines, including several in one run.
#include <gtest/gtest.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "kiln/error.h"

namespace kiln::frontend {
namespace {

// The first statement of `def f():` wrapping `body`, as a one-line expression.
std::string expr_of(const std::string& line) {
  auto m = parse_module("def f():\n    return " + line + "\n", "t.kiln");
  return dump_expr(*m->functions[0].body[0]->value);
}

std::string syntax_error(const std::string& src) {
  try {
    parse_module(src, "t.kiln");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FrontendParser, OperatorPrecedence) {
  EXPECT_EQ(expr_of("a + b * c ** -d"), "(a + (b * (c ** (-d))))");
  EXPECT_EQ(expr_of("-a ** 2"), "(-(a ** 2))");
  EXPECT_EQ(expr_of("a @ b + c"), "((a @ b) + c)");
  EXPECT_EQ(expr_of("~m | n & k"), "((~m) | (n & k))");
  EXPECT_EQ(expr_of("a < b <= c"), "(a < b <= c)");
  EXPECT_EQ(expr_of("not a and b or c"), "(((not a) and b) or c)");
  EXPECT_EQ(expr_of("x if c else y"), "(x if c else y)");
  EXPECT_EQ(expr_of("2 ** 3 ** 2"), "(2 ** (3 ** 2))");
}

TEST(FrontendParser, CallsAttributesAndSubscripts) {
  EXPECT_EQ(expr_of("F.linear(x, w, bias=b).view(-1, 4)"), "F.linear(x, w, bias=b).view(-1, 4)");
  EXPECT_EQ(expr_of("x[1:, ::2]"), "x[1:, ::2]");
  EXPECT_EQ(expr_of("x[..., -1]"), "x[..., -1]");
  EXPECT_EQ(expr_of("x[None, :, 1:5:2]"), "x[None, :, 1:5:2]");
  EXPECT_EQ(expr_of("float('-inf')"), "float('-inf')");
  EXPECT_EQ(expr_of("(a, b)"), "(a, b)");
  EXPECT_EQ(expr_of("(a,)"), "(a,)");
  EXPECT_EQ(expr_of("[1, 2]"), "[1, 2]");
}

TEST(FrontendParser, AstDumpOfFunction) {
  auto m = parse_module(
      "import torch\n"
      "@torch.jit.script\n"
      "def f(x: Tensor[f32, N, 4], k: int = 2) -> Tensor:\n"
      "    \"\"\"doc\"\"\"\n"
      "    y = x * k\n"
      "    y += 1\n"
      "    if k > 1:\n"
      "        return y\n"
      "    return x\n",
      "t.kiln");
  EXPECT_EQ(dump_ast(*m),
            "Module t.kiln\n"
            "  FunctionDef f @3:1\n"
            "    Decorator torch.jit.script\n"
            "    Param x: Tensor[f32, N, 4] @3:7\n"
            "    Param k: int = 2 @3:29\n"
            "    Returns Tensor\n"
            "    Expr @4:5\n"
            "      value: Str 'doc' @4:5\n"
            "    Assign @5:5\n"
            "      target: Name y @5:5\n"
            "      value: BinOp * @5:9\n"
            "        Name x @5:9\n"
            "        Name k @5:13\n"
            "    AugAssign += @6:5\n"
            "      target: Name y @6:5\n"
            "      value: Int 1 @6:10\n"
            "    If @7:5\n"
            "      test: Compare > @7:8\n"
            "        Name k @7:8\n"
            "        Int 1 @7:12\n"
            "      body:\n"
            "        Return @8:9\n"
            "          value: Name y @8:16\n"
            "    Return @9:5\n"
            "      value: Name x @9:12\n");
}

TEST(FrontendParser, TupleUnpackingAndElif) {
  auto m = parse_module(
      "def f(x):\n"
      "    a, b = x.chunk(2)\n"
      "    if a:\n"
      "        pass\n"
      "    elif b:\n"
      "        pass\n"
      "    else:\n"
      "        pass\n"
      "    return a, b\n",
      "t.kiln");
  const auto& body = m->functions[0].body;
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(dump_expr(*body[0]->targets[0]), "(a, b)");
  EXPECT_EQ(body[1]->orelse.size(), 1u);
  EXPECT_EQ(body[1]->orelse[0]->kind, StmtKind::If);
  EXPECT_EQ(body[1]->orelse[0]->orelse.size(), 1u);
  EXPECT_EQ(dump_expr(*body[2]->value), "(a, b)");
}

TEST(FrontendParser, FunctionInfoReportsParams) {
  auto m = parse_module(
      "def helper(x):\n    return x\n"
      "def main(x: Tensor[f16, N, 784], w: Tensor, eps: float = 1e-5, dims: List[int] = [0, 1],\n"
      "         heads: int = 4, name: str = 'a', flag: bool = False):\n    return x\n",
      "t.kiln");
  std::vector<FunctionInfo> fns = functions(*m);
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(fns[0].name, "helper");
  EXPECT_EQ(fns[0].params[0].kind, ParamKind::Tensor);
  const FunctionInfo& f = fns[1];
  EXPECT_EQ(f.loc.line, 3);
  ASSERT_EQ(f.params.size(), 7u);
  ASSERT_TRUE(f.params[0].declared.has_value());
  EXPECT_EQ(f.params[0].declared->str(), "f16[N, 784]");
  EXPECT_EQ(f.params[0].annotation, "Tensor[f16, N, 784]");
  EXPECT_FALSE(f.params[1].declared.has_value());
  EXPECT_EQ(f.params[2].kind, ParamKind::Float);
  EXPECT_TRUE(f.params[2].has_default);
  EXPECT_EQ(std::get<double>(f.params[2].default_value), 1e-5);
  EXPECT_EQ(f.params[3].kind, ParamKind::IntList);
  EXPECT_EQ(std::get<std::vector<int64_t>>(f.params[3].default_value),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(f.params[4].kind, ParamKind::Int);
  EXPECT_EQ(f.params[5].kind, ParamKind::Str);
  EXPECT_EQ(f.params[6].kind, ParamKind::Bool);
  EXPECT_EQ(std::get<bool>(f.params[6].default_value), false);
}

TEST(FrontendParser, LaterDefReplacesEarlier) {
  auto m = parse_module(
      "def f(x):\n    return x\ndef g(y):\n    return y\ndef f(a, b):\n    return a\n", "t.kiln");
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[0].name, "g");
  ASSERT_NE(m->find("f"), nullptr);
  EXPECT_EQ(m->find("f")->params.size(), 2u);
  EXPECT_EQ(m->find("f")->span.line, 5);
}

TEST(FrontendParser, DuplicateArgument) {
  EXPECT_EQ(syntax_error("def f(x, y, x=1):\n    return y\n"),
            "t.kiln:1:13: error: duplicate argument 'x' in function definition\n"
            "def f(x, y, x=1):\n"
            "            ^");
}

TEST(FrontendParser, SyntaxErrorHasLocationAndCaret) {
  EXPECT_EQ(syntax_error("def f(x):\n    y = x +\n    return y\n"),
            "t.kiln:2:12: error: expected an expression, got end of line\n"
            "    y = x +\n"
            "           ^");
}

TEST(FrontendParser, MissingColon) {
  EXPECT_EQ(syntax_error("def f(x)\n    return x\n"),
            "t.kiln:1:9: error: expected ':' after the function signature, got end of line\n"
            "def f(x)\n"
            "        ^");
}

TEST(FrontendParser, UnexpectedIndent) {
  EXPECT_EQ(syntax_error("def f(x):\n    y = x\n        z = y\n    return y\n"),
            "t.kiln:3:9: error: unexpected indent\n"
            "        z = y\n"
            "        ^");
}

TEST(FrontendParser, SeveralErrorsInOneRun) {
  std::string msg = syntax_error(
      "def f(x):\n"
      "    a = (x +\n"
      "         )\n"
      "    b = x ** * 2\n"
      "    return x\n"
      "def g(x:\n");
  EXPECT_NE(msg.find("t.kiln:3:10: error: expected an expression, got ')'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("t.kiln:4:14: error: expected an expression, got '*'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("t.kiln:6:6: error: '(' was never closed\ndef g(x:\n     ^\n"),
            std::string::npos)
      << msg;
}

TEST(FrontendParser, UnsupportedConstructsParse) {
  // Rejected later by the lowering with a location; the parser keeps them.
  auto m = parse_module(
      "def f(x):\n"
      "    g = lambda y: y\n"
      "    s = [i for i in range(3)]\n"
      "    while x:\n"
      "        pass\n"
      "    return x\n",
      "t.kiln");
  const auto& body = m->functions[0].body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(dump_expr(*body[0]->value), "<lambda expressions>");
  EXPECT_EQ(dump_expr(*body[1]->value), "<list comprehensions>");
  EXPECT_EQ(body[2]->kind, StmtKind::While);
}

TEST(FrontendParser, FileWithoutDefIsAnError) {
  EXPECT_EQ(syntax_error("x = 1\n"), "t.kiln: error: no function definition (def) found");
}

}  // namespace
}  // namespace kiln::frontend
