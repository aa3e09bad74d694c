// The recursive-descent parser's class, shared by parser.cpp (the module,
// definitions and statements) and parser_expr.cpp (expressions, by Python's
// precedence levels). Internal to frontend/: the public entry is parse() in
// ast.h. Token helpers, error recovery and the nesting limits are inline here.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/lexer.h"

namespace kiln::frontend::parser_detail {

// Thrown after a syntax error has been recorded; caught at statement level.
struct SyntaxAbort {};

class Parser {
 public:
  Parser(std::vector<Token> toks, Diagnostics& diags) : t_(std::move(toks)), diags_(diags) {}

  void parse_module(Module& m) {
    while (!at(Tok::End)) {
      if (accept(Tok::Newline)) continue;
      try {
        if (cur().kind == Tok::Indent) {
          error(cur().span, "unexpected indent");
        }
        if (starts_def()) {
          FunctionDef f = parse_def();
          // A later `def` of the same name rebinds it, as in Python: the
          // last definition is the one --fn and calls see.
          std::erase_if(m.functions, [&](const FunctionDef& g) { return g.name == f.name; });
          m.functions.push_back(std::move(f));
          continue;
        }
        // Any other top-level statement (a class, `if __name__ == ...`, an
        // import) matters only if the chosen def reaches it, and it may use
        // Python syntax this parser does not know: when it does not parse, it
        // is skipped silently (with its indented block) instead of failing
        // the file. Defs are still parsed strictly.
        size_t errors = diags_.count();
        try {
          StmtPtr s = parse_statement();
          if (diags_.count() == errors && s && s->kind == StmtKind::Import) {
            for (const auto& [bound, module] : s->imports) m.imports[bound] = module;
          } else if (diags_.count() == errors && s && !is_docstring(*s)) {
            m.globals.push_back(std::move(s));
          }
        } catch (const SyntaxAbort&) {
          recover();
        }
        diags_.take_from(errors);
      } catch (const SyntaxAbort&) {
        recover();
      }
    }
  }

 private:
  // --- token helpers ------------------------------------------------------------
  const Token& cur() const { return t_[pos_]; }
  const Token& peek_tok(size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  bool at_op(const char* s) const { return cur().is_op(s); }
  bool at_kw(const char* s) const { return cur().is_kw(s); }
  const Token& take() {
    const Token& tok = t_[pos_];
    prev_end_ = {tok.span.end_line, tok.span.end_col};
    if (pos_ + 1 < t_.size()) ++pos_;
    return tok;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  bool accept_op(const char* s) {
    if (!at_op(s)) return false;
    take();
    return true;
  }
  bool accept_kw(const char* s) {
    if (!at_kw(s)) return false;
    take();
    return true;
  }
  void expect_op(const char* s, const char* context) {
    if (!accept_op(s)) {
      error(cur().span,
            std::string("expected '") + s + "' " + context + ", got " + describe(cur()));
    }
  }
  std::string expect_name(const char* what) {
    if (!at(Tok::Name))
      error(cur().span, std::string("expected ") + what + ", got " + describe(cur()));
    return take().text;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::Newline:
        return "end of line";
      case Tok::Indent:
        return "an indented block";
      case Tok::Dedent:
        return "end of block";
      case Tok::End:
        return "end of file";
      case Tok::String:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }

  [[noreturn]] void error(const Span& span, const std::string& msg) {
    diags_.error(span, msg);
    throw SyntaxAbort{};
  }

  // Skips the rest of the current statement and any block hanging off it.
  void recover() {
    while (!at(Tok::End) && !at(Tok::Newline)) {
      if (at(Tok::Indent) || at(Tok::Dedent)) break;
      take();
    }
    accept(Tok::Newline);
    if (at(Tok::Indent)) skip_block();
  }
  void skip_block() {
    int depth = 0;
    while (!at(Tok::End)) {
      if (at(Tok::Indent)) ++depth;
      if (at(Tok::Dedent) && --depth == 0) {
        take();
        return;
      }
      take();
    }
  }

  Span span_from(const Span& b) const { return {b.line, b.col, prev_end_.line, prev_end_.col}; }

  // --- nesting limits (kMaxExprNesting, kMaxBlockNesting) -----------------------------
  // One level of a recursive production; rejects input nested deeper than
  // `limit` at the token that would open the next level.
  class Nested {
   public:
    Nested(Parser& p, int& depth, int limit) : depth_(depth) {
      if (depth_ >= limit) {
        p.error(p.cur().span, &depth == &p.block_depth_ ? block_message() : expr_message());
      }
      ++depth_;
    }
    ~Nested() { --depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    int& depth_;
  };
  static std::string expr_message() {
    return "expression is nested too deeply (more than " + std::to_string(kMaxExprNesting) +
           " levels)";
  }
  static std::string block_message() {
    return "blocks are nested too deeply (more than " + std::to_string(kMaxBlockNesting) +
           " levels)";
  }
  // Records a finished node's height. Left-associative chains (a + b + c ...,
  // x.f().g() ...) grow the tree in a loop without nesting the parser's calls,
  // so the height is checked here as well; the error points at the operator or
  // name where the limit is crossed.
  ExprPtr seal(ExprPtr e) {
    int h = 0;
    for (const ExprPtr& c : e->items) {
      if (c) h = std::max(h, c->height);
    }
    for (const Keyword& k : e->keywords) {
      if (k.value) h = std::max(h, k.value->height);
    }
    e->height = h + 1;
    if (e->height > kMaxExprNesting) error(e->op_span.line ? e->op_span : e->span, expr_message());
    return e;
  }

  ExprPtr make(ExprKind k, const Span& s) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->span = s;
    return e;
  }

  static bool is_docstring(const Stmt& s) {
    return s.kind == StmtKind::Expr && s.value && s.value->kind == ExprKind::Str;
  }

  // --- definitions ------------------------------------------------------------------
  // At `def` or at decorators followed by `def` (not by `class`).
  bool starts_def() const {
    size_t i = pos_;
    while (i < t_.size() && t_[i].is_op("@")) {
      while (i < t_.size() && t_[i].kind != Tok::Newline && t_[i].kind != Tok::End) ++i;
      if (i < t_.size() && t_[i].kind == Tok::Newline) ++i;
    }
    return i < t_.size() && t_[i].is_kw("def");
  }
  FunctionDef parse_def();
  std::vector<StmtPtr> parse_block(const char* context);

  // --- statements ------------------------------------------------------------------------
  StmtPtr parse_statement();
  void parse_statement_into(std::vector<StmtPtr>& out);
  StmtPtr parse_if();
  void parse_simple_line(std::vector<StmtPtr>& out);
  StmtPtr stmt(StmtKind k, const Span& b);
  StmtPtr parse_small();
  // `a, b` in a for header: stops before `in`, which parse_testlist would eat
  // as a comparison.
  ExprPtr parse_target_list();

  // --- expressions -----------------------------------------------------------------------
  ExprPtr parse_testlist(bool allow_star = false);
  ExprPtr parse_test_or_star(bool allow_star);
  ExprPtr parse_test();
  ExprPtr string_annotation(ExprPtr a);  // "Tensor" -> Tensor (parser.cpp)
  ExprPtr parse_boolop(const char* kw, ExprPtr (Parser::*next)());
  ExprPtr parse_or() { return parse_boolop("or", &Parser::parse_and); }
  ExprPtr parse_and() { return parse_boolop("and", &Parser::parse_not); }
  ExprPtr parse_not();
  ExprPtr parse_comparison();
  ExprPtr parse_binary_level(const std::vector<const char*>& ops, ExprPtr (Parser::*next)());
  ExprPtr parse_bitor() { return parse_binary_level({"|"}, &Parser::parse_xor); }
  ExprPtr parse_xor() { return parse_binary_level({"^"}, &Parser::parse_bitand); }
  ExprPtr parse_bitand() { return parse_binary_level({"&"}, &Parser::parse_shift); }
  ExprPtr parse_shift() { return parse_binary_level({"<<", ">>"}, &Parser::parse_arith); }
  ExprPtr parse_arith() { return parse_binary_level({"+", "-"}, &Parser::parse_term); }
  ExprPtr parse_term();
  ExprPtr parse_factor();
  ExprPtr parse_power();
  ExprPtr parse_postfix();
  void parse_call_args(Expr& call);
  // One subscript element: an expression or a slice `a:b:c`.
  ExprPtr parse_subscript();
  ExprPtr parse_subscript_list();
  ExprPtr parse_atom();
  ExprPtr parse_paren();
  ExprPtr parse_list();
  ExprPtr parse_comprehension(const Span& b, const char* close, const char* what);
  ExprPtr parse_dict();

  std::vector<Token> t_;
  size_t pos_ = 0;
  int expr_depth_ = 0;   // open parse_test / unary / power levels
  int block_depth_ = 0;  // open blocks and elif levels
  struct {
    int line = 0, col = 0;
  } prev_end_;
  Diagnostics& diags_;
};

}  // namespace kiln::frontend::parser_detail
