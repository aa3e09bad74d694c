// Tests of the script tokenizer: token streams (indentation, implicit line
// joining, literals, operators) and lexical diagnostics with exact positions.
#include <gtest/gtest.h>

#include "frontend/lexer.h"

namespace kiln::frontend {
namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::string errors;
};

Lexed lex(const std::string& src) {
  auto file = std::make_shared<const SourceFile>(src, "t.kiln");
  Diagnostics diags(file);
  Lexed out;
  out.tokens = tokenize(*file, diags);
  out.errors = diags.render();
  return out;
}

std::string toks(const std::string& src) {
  return tokens_str(lex(src).tokens);
}

TEST(FrontendLexer, DefWithIndentedBody) {
  EXPECT_EQ(toks("def f(x):\n    return x + 1\n"),
            "Keyword(def) Name(f) Op(() Name(x) Op()) Op(:) Newline Indent Keyword(return) Name(x) "
            "Op(+) Int(1) Newline Dedent End");
}

TEST(FrontendLexer, NestedBlocksDedentTwice) {
  EXPECT_EQ(toks("if a:\n  if b:\n    x\ny\n"),
            "Keyword(if) Name(a) Op(:) Newline Indent Keyword(if) Name(b) Op(:) Newline Indent "
            "Name(x) Newline Dedent Dedent Name(y) Newline End");
}

// CPython's rule: a line's indentation must compare the same way (deeper,
// equal, shallower) with the enclosing blocks at tab size 8 and tab size 1.
TEST(FrontendLexer, TabError) {
  const std::string tab_error =
      "error: TabError: inconsistent use of tabs and spaces in indentation";
  // Equal at tab size 8 (8 spaces vs a tab), not at tab size 1.
  EXPECT_NE(lex("if a:\n        x\n\ty\n").errors.find("t.kiln:3:2: " + tab_error),
            std::string::npos);
  // Deeper at tab size 8, shallower at tab size 1.
  EXPECT_NE(lex("if a:\n    if b:\n\tx\n").errors.find("t.kiln:3:2: " + tab_error),
            std::string::npos);
  // Back to a level that matches at tab size 8 only.
  EXPECT_NE(lex("if a:\n\tif b:\n\t\tx\n        y\n").errors.find("t.kiln:4:9: " + tab_error),
            std::string::npos);
  // Consistent mixes are fine, as in Python.
  EXPECT_EQ(lex("if a:\n\tx\n\tif b:\n\t    y\n\tz\n").errors, "");
  EXPECT_EQ(lex("if a:\n  \tx\n  \ty\n").errors, "");
  // A form feed resets the count.
  EXPECT_EQ(lex("if a:\n    x\n\f    y\n").errors, "");
}

TEST(FrontendLexer, BlankLinesAndCommentsDoNotCount) {
  EXPECT_EQ(
      toks("def f():\n\n    # comment\n    pass  # trailing\n\n"),
      "Keyword(def) Name(f) Op(() Op()) Op(:) Newline Indent Keyword(pass) Newline Dedent End");
}

TEST(FrontendLexer, BracketsJoinLines) {
  EXPECT_EQ(toks("y = f(a,\n      b)\n"),
            "Name(y) Op(=) Name(f) Op(() Name(a) Op(,) Name(b) Op()) Newline End");
  EXPECT_EQ(toks("y = a + \\\n    b\n"), "Name(y) Op(=) Name(a) Op(+) Name(b) Newline End");
}

TEST(FrontendLexer, NumberLiterals) {
  Lexed l = lex("1 2.5 1e-5 .5 0x1F 1_000 3.\n");
  ASSERT_EQ(l.tokens.size(), 9u);
  EXPECT_EQ(l.tokens[0].kind, Tok::Int);
  EXPECT_EQ(l.tokens[0].ival, 1);
  EXPECT_EQ(l.tokens[1].kind, Tok::Float);
  EXPECT_DOUBLE_EQ(l.tokens[1].fval, 2.5);
  EXPECT_DOUBLE_EQ(l.tokens[2].fval, 1e-5);
  EXPECT_DOUBLE_EQ(l.tokens[3].fval, 0.5);
  EXPECT_EQ(l.tokens[4].ival, 31);
  EXPECT_EQ(l.tokens[5].ival, 1000);
  EXPECT_EQ(l.tokens[6].kind, Tok::Float);
  EXPECT_DOUBLE_EQ(l.tokens[6].fval, 3.0);
  EXPECT_EQ(l.errors, "");
}

TEST(FrontendLexer, StringLiterals) {
  Lexed l = lex("'a\\tb' \"q\" '''multi\nline''' r'\\n'\n");
  ASSERT_GE(l.tokens.size(), 4u);
  EXPECT_EQ(l.tokens[0].text, "a\tb");
  EXPECT_EQ(l.tokens[1].text, "q");
  EXPECT_EQ(l.tokens[2].text, "multi\nline");
  EXPECT_EQ(l.tokens[3].text, "\\n");
  EXPECT_EQ(l.errors, "");
}

TEST(FrontendLexer, LongestOperatorWins) {
  EXPECT_EQ(
      toks("a **= b // c -> ... != <= @ ~\n"),
      "Name(a) Op(**=) Name(b) Op(//) Name(c) Op(->) Op(...) Op(!=) Op(<=) Op(@) Op(~) Newline "
      "End");
}

TEST(FrontendLexer, TokenSpansAreOneBased) {
  Lexed l = lex("x = foo\n");
  EXPECT_EQ(l.tokens[2].span.line, 1);
  EXPECT_EQ(l.tokens[2].span.col, 5);
  EXPECT_EQ(l.tokens[2].span.end_col, 8);
}

TEST(FrontendLexer, UnterminatedStringIsReported) {
  Lexed l = lex("x = 'abc\ny = 1\n");
  EXPECT_EQ(l.errors, "t.kiln:1:5: error: unterminated string literal\nx = 'abc\n    ^\n");
  // The next line still lexes.
  EXPECT_NE(tokens_str(l.tokens).find("Name(y) Op(=) Int(1)"), std::string::npos);
}

TEST(FrontendLexer, InvalidCharacterIsReported) {
  Lexed l = lex("y = x $ 2\n");
  EXPECT_EQ(l.errors, "t.kiln:1:7: error: invalid character '$' in script\ny = x $ 2\n      ^\n");
}

TEST(FrontendLexer, BadDedentIsReported) {
  Lexed l = lex("def f():\n    a = 1\n  b = 2\n    return a\n");
  EXPECT_EQ(
      l.errors,
      "t.kiln:3:3: error: unindent does not match any outer indentation level\n  b = 2\n  ^\n");
}

TEST(FrontendLexer, NumberGluedToNameIsAnError) {
  Lexed l = lex("x = 3abc\n");
  EXPECT_EQ(l.errors, "t.kiln:1:5: error: invalid number literal '3abc'\nx = 3abc\n    ^~~~\n");
}

}  // namespace
}  // namespace kiln::frontend
