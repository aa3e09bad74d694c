// Recursive-descent parser for the Python subset (see docs/language.md), with
// Python's operator precedence. After a syntax error it records a diagnostic,
// skips to the end of the statement (and its indented block) and goes on, so
// one run reports every independent syntax error. Constructs that Kiln does not
// run (lambda, comprehensions, dicts, class, with, try, ...) are parsed into
// Unsupported nodes so the lowering can reject them with a precise location.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "frontend/ast.h"
#include "frontend/lexer.h"

namespace kiln::frontend {

const FunctionDef* Module::find(const std::string& name) const {
  for (const FunctionDef& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

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
        if (cur().is_op("@") || cur().is_kw("def")) {
          m.functions.push_back(parse_def());
          continue;
        }
        StmtPtr s = parse_statement();
        if (s && s->kind != StmtKind::Import && !is_docstring(*s))
          m.globals.push_back(std::move(s));
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
  FunctionDef parse_def() {
    FunctionDef f;
    while (accept_op("@")) {
      f.decorators.push_back(parse_test());
      if (!accept(Tok::Newline)) error(cur().span, "expected end of line after decorator");
    }
    Span b = cur().span;
    if (!accept_kw("def")) error(cur().span, "expected 'def' after decorator");
    f.name = expect_name("a function name");
    f.span = span_from(b);
    expect_op("(", "after the function name");
    while (!at_op(")")) {
      Param p;
      if (at_op("*") || at_op("**")) {
        error(cur().span, "*args and **kwargs parameters are not supported yet");
      }
      p.span = cur().span;
      p.name = expect_name("a parameter name");
      if (accept_op(":")) p.annotation = parse_test();
      if (accept_op("=")) p.default_value = parse_test();
      f.params.push_back(std::move(p));
      if (!accept_op(",")) break;
    }
    expect_op(")", "to close the parameter list");
    if (accept_op("->")) f.returns = parse_test();
    f.body = parse_block("after the function signature");
    return f;
  }

  std::vector<StmtPtr> parse_block(const char* context) {
    Nested nest(*this, block_depth_, kMaxBlockNesting);  // reported at the ':'
    expect_op(":", context);
    std::vector<StmtPtr> body;
    if (!accept(Tok::Newline)) {  // one-line body: `if c: return x`
      parse_simple_line(body);
      return body;
    }
    if (!accept(Tok::Indent)) error(cur().span, "expected an indented block");
    while (!at(Tok::Dedent) && !at(Tok::End)) {
      if (accept(Tok::Newline)) continue;
      try {
        if (at(Tok::Indent)) error(cur().span, "unexpected indent");
        parse_statement_into(body);
      } catch (const SyntaxAbort&) {
        recover();
      }
    }
    accept(Tok::Dedent);
    return body;
  }

  // --- statements ------------------------------------------------------------------------
  StmtPtr parse_statement() {
    std::vector<StmtPtr> out;
    parse_statement_into(out);
    if (out.empty()) return nullptr;
    // Only the first statement of a `a; b` line is returned at module level;
    // the others are rare and follow it.
    return std::move(out.front());
  }

  void parse_statement_into(std::vector<StmtPtr>& out) {
    Span b = cur().span;
    if (at_kw("if")) {
      out.push_back(parse_if());
    } else if (at_kw("for")) {
      take();
      auto s = stmt(StmtKind::For, b);
      s->targets.push_back(parse_target_list());
      if (!accept_kw("in")) error(cur().span, "expected 'in' in for loop, got " + describe(cur()));
      s->value = parse_testlist();
      s->span = span_from(b);
      s->body = parse_block("after the for header");
      if (at_kw("else")) {
        Span e = take().span;
        error(e, "'for ... else' is not supported yet");
      }
      out.push_back(std::move(s));
    } else if (at_kw("while")) {
      take();
      auto s = stmt(StmtKind::While, b);
      s->test = parse_test();
      s->span = span_from(b);
      s->body = parse_block("after the while condition");
      out.push_back(std::move(s));
    } else if (at_kw("def") || at_op("@")) {
      auto s = stmt(StmtKind::Def, b);
      FunctionDef inner = parse_def();
      s->name = inner.name;
      s->span = inner.span;
      out.push_back(std::move(s));
    } else if (at_kw("class") || at_kw("with") || at_kw("try") || at_kw("async")) {
      std::string what = take().text;
      auto s = stmt(StmtKind::Unsupported, b);
      s->name = what == "class" ? "class definitions" : "'" + what + "' statements";
      while (!at_op(":") && !at(Tok::Newline) && !at(Tok::End)) take();
      s->span = span_from(b);
      parse_block("after the statement header");
      while (at_kw("except") || at_kw("finally") || at_kw("else")) {
        while (!at_op(":") && !at(Tok::Newline) && !at(Tok::End)) take();
        parse_block("after the clause header");
      }
      out.push_back(std::move(s));
    } else {
      parse_simple_line(out);
    }
  }

  StmtPtr parse_if() {
    Span b = take().span;  // `if` or `elif`
    auto s = stmt(StmtKind::If, b);
    s->test = parse_test();
    s->span = span_from(b);
    s->body = parse_block("after the if condition");
    if (at_kw("elif")) {
      // An elif chain nests If nodes in orelse, so it counts as block nesting.
      Nested nest(*this, block_depth_, kMaxBlockNesting);
      s->orelse.push_back(parse_if());
    } else if (accept_kw("else")) {
      s->orelse = parse_block("after 'else'");
    }
    return s;
  }

  void parse_simple_line(std::vector<StmtPtr>& out) {
    out.push_back(parse_small());
    while (accept_op(";")) {
      if (at(Tok::Newline)) break;
      out.push_back(parse_small());
    }
    if (!accept(Tok::Newline) && !at(Tok::End)) {
      error(cur().span, "expected end of line, got " + describe(cur()));
    }
  }

  StmtPtr stmt(StmtKind k, const Span& b) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->span = b;
    return s;
  }

  StmtPtr parse_small() {
    Span b = cur().span;
    if (accept_kw("pass")) return stmt(StmtKind::Pass, b);
    if (accept_kw("break")) return stmt(StmtKind::Break, b);
    if (accept_kw("continue")) return stmt(StmtKind::Continue, b);
    if (accept_kw("return")) {
      auto s = stmt(StmtKind::Return, b);
      if (!at(Tok::Newline) && !at_op(";") && !at(Tok::End)) s->value = parse_testlist();
      s->span = span_from(b);
      return s;
    }
    if (at_kw("import") || at_kw("from")) {
      // import a.b as c / from a import b, c — nothing to run.
      while (!at(Tok::Newline) && !at(Tok::End) && !at_op(";")) take();
      return stmt(StmtKind::Import, b);
    }
    if (accept_kw("assert")) {
      auto s = stmt(StmtKind::Assert, b);
      s->test = parse_test();
      if (accept_op(",")) s->value = parse_test();
      s->span = span_from(b);
      return s;
    }
    if (at_kw("raise") || at_kw("del") || at_kw("global") || at_kw("nonlocal") || at_kw("yield")) {
      std::string what = take().text;
      auto s = stmt(StmtKind::Unsupported, b);
      s->name = "'" + what + "' statements";
      while (!at(Tok::Newline) && !at(Tok::End) && !at_op(";")) take();
      s->span = {b.line, b.col, b.end_line, b.end_col};
      return s;
    }
    ExprPtr first = parse_testlist(/*allow_star=*/true);
    if (accept_op(":")) {
      auto s = stmt(StmtKind::AnnAssign, b);
      s->annotation = parse_test();
      if (accept_op("=")) s->value = parse_testlist();
      s->targets.push_back(std::move(first));
      s->span = span_from(b);
      return s;
    }
    static const char* const aug[] = {
        "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>="};
    for (const char* a : aug) {
      if (at_op(a)) {
        take();
        auto s = stmt(StmtKind::AugAssign, b);
        std::string op(a);
        s->op = op.substr(0, op.size() - 1);
        s->targets.push_back(std::move(first));
        s->value = parse_testlist();
        s->span = span_from(b);
        return s;
      }
    }
    if (at_op("=")) {
      auto s = stmt(StmtKind::Assign, b);
      s->targets.push_back(std::move(first));
      while (accept_op("=")) s->targets.push_back(parse_testlist(true));
      s->value = std::move(s->targets.back());
      s->targets.pop_back();
      s->span = span_from(b);
      return s;
    }
    auto s = stmt(StmtKind::Expr, b);
    s->value = std::move(first);
    s->span = span_from(b);
    return s;
  }

  // `a, b` in a for header: stops before `in`, which parse_testlist would eat
  // as a comparison.
  ExprPtr parse_target_list() {
    Span b = cur().span;
    std::vector<ExprPtr> items;
    items.push_back(parse_bitor());
    bool tuple = false;
    while (accept_op(",")) {
      tuple = true;
      if (at_kw("in")) break;
      items.push_back(parse_bitor());
    }
    if (!tuple) return std::move(items[0]);
    auto e = make(ExprKind::Tuple, span_from(b));
    e->items = std::move(items);
    return seal(std::move(e));
  }

  // --- expressions -----------------------------------------------------------------------
  ExprPtr parse_testlist(bool allow_star = false) {
    Span b = cur().span;
    ExprPtr first = parse_test_or_star(allow_star);
    if (!at_op(",")) return first;
    auto e = make(ExprKind::Tuple, b);
    e->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (at(Tok::Newline) || at_op("=") || at_op(")") || at(Tok::End) || at_op(";")) break;
      e->items.push_back(parse_test_or_star(allow_star));
    }
    e->span = span_from(b);
    return seal(std::move(e));
  }

  ExprPtr parse_test_or_star(bool allow_star) {
    if (allow_star && at_op("*")) {
      Span b = take().span;
      auto e = make(ExprKind::Starred, b);
      e->items.push_back(parse_bitor());
      e->span = span_from(b);
      return seal(std::move(e));
    }
    return parse_test();
  }

  ExprPtr parse_test() {
    // Every bracket, argument list and subscript recurses through here.
    Nested nest(*this, expr_depth_, kMaxExprNesting);
    Span b = cur().span;
    if (accept_kw("lambda")) {
      while (!at_op(":") && !at(Tok::Newline) && !at(Tok::End)) take();
      expect_op(":", "in lambda");
      parse_test();
      auto e = make(ExprKind::Unsupported, span_from(b));
      e->name = "lambda expressions";
      return e;
    }
    ExprPtr body = parse_or();
    if (at_kw("if")) {
      take();
      ExprPtr test = parse_or();
      if (!accept_kw("else")) error(cur().span, "expected 'else' in conditional expression");
      ExprPtr orelse = parse_test();
      auto e = make(ExprKind::IfExp, span_from(b));
      e->items.push_back(std::move(body));
      e->items.push_back(std::move(test));
      e->items.push_back(std::move(orelse));
      return seal(std::move(e));
    }
    return body;
  }

  ExprPtr parse_boolop(const char* kw, ExprPtr (Parser::*next)()) {
    Span b = cur().span;
    ExprPtr left = (this->*next)();
    if (!at_kw(kw)) return left;
    auto e = make(ExprKind::BoolOp, b);
    e->op = kw;
    e->op_span = cur().span;
    e->items.push_back(std::move(left));
    while (accept_kw(kw)) e->items.push_back((this->*next)());
    e->span = span_from(b);
    return seal(std::move(e));
  }
  ExprPtr parse_or() { return parse_boolop("or", &Parser::parse_and); }
  ExprPtr parse_and() { return parse_boolop("and", &Parser::parse_not); }
  ExprPtr parse_not() {
    if (at_kw("not")) {
      Span b = take().span;
      auto e = make(ExprKind::UnaryOp, b);
      e->op = "not";
      e->op_span = b;
      {
        Nested nest(*this, expr_depth_, kMaxExprNesting);
        e->items.push_back(parse_not());
      }
      e->span = span_from(b);
      return seal(std::move(e));
    }
    return parse_comparison();
  }

  ExprPtr parse_comparison() {
    Span b = cur().span;
    ExprPtr left = parse_bitor();
    ExprPtr e;
    for (;;) {
      std::string op;
      Span os = cur().span;
      static const char* const cmp[] = {"<", ">", "==", ">=", "<=", "!="};
      for (const char* c : cmp) {
        if (at_op(c)) op = c;
      }
      if (!op.empty()) {
        take();
      } else if (at_kw("in")) {
        take();
        op = "in";
      } else if (at_kw("not") && peek_tok().is_kw("in")) {
        take();
        take();
        op = "not in";
      } else if (at_kw("is")) {
        take();
        op = accept_kw("not") ? "is not" : "is";
      } else {
        break;
      }
      if (!e) {
        e = make(ExprKind::Compare, b);
        e->op_span = os;
        e->items.push_back(std::move(left));
      }
      e->ops.push_back(op);
      e->items.push_back(parse_bitor());
    }
    if (!e) return left;
    e->span = span_from(b);
    return seal(std::move(e));
  }

  ExprPtr parse_binary_level(const std::vector<const char*>& ops, ExprPtr (Parser::*next)()) {
    Span b = cur().span;
    ExprPtr left = (this->*next)();
    for (;;) {
      const char* found = nullptr;
      for (const char* o : ops) {
        if (at_op(o)) found = o;
      }
      if (!found) return left;
      Span os = take().span;
      ExprPtr right = (this->*next)();
      auto e = make(ExprKind::BinOp, span_from(b));
      e->op = found;
      e->op_span = os;
      e->items.push_back(std::move(left));
      e->items.push_back(std::move(right));
      left = seal(std::move(e));
    }
  }
  ExprPtr parse_bitor() { return parse_binary_level({"|"}, &Parser::parse_xor); }
  ExprPtr parse_xor() { return parse_binary_level({"^"}, &Parser::parse_bitand); }
  ExprPtr parse_bitand() { return parse_binary_level({"&"}, &Parser::parse_shift); }
  ExprPtr parse_shift() { return parse_binary_level({"<<", ">>"}, &Parser::parse_arith); }
  ExprPtr parse_arith() { return parse_binary_level({"+", "-"}, &Parser::parse_term); }
  ExprPtr parse_term() {
    return parse_binary_level({"*", "/", "//", "%", "@"}, &Parser::parse_factor);
  }

  ExprPtr parse_factor() {
    if (at_op("-") || at_op("+") || at_op("~")) {
      Span b = cur().span;
      std::string op = take().text;
      ExprPtr operand;
      {
        Nested nest(*this, expr_depth_, kMaxExprNesting);
        operand = parse_factor();
      }
      // Fold -literal so `-1` is an Int, as Python's constant folding does.
      if (op == "-" && (operand->kind == ExprKind::Int || operand->kind == ExprKind::Float)) {
        operand->ival = -operand->ival;
        operand->fval = -operand->fval;
        operand->span = span_from(b);
        return operand;
      }
      auto e = make(ExprKind::UnaryOp, b);
      e->op = op;
      e->op_span = b;
      e->items.push_back(std::move(operand));
      e->span = span_from(b);
      return seal(std::move(e));
    }
    return parse_power();
  }

  ExprPtr parse_power() {
    Span b = cur().span;
    ExprPtr base = parse_postfix();
    if (!at_op("**")) return base;
    Span os = take().span;
    ExprPtr exp;
    {
      Nested nest(*this, expr_depth_, kMaxExprNesting);
      exp = parse_factor();  // right-associative, binds tighter than unary on the left
    }
    auto e = make(ExprKind::BinOp, span_from(b));
    e->op = "**";
    e->op_span = os;
    e->items.push_back(std::move(base));
    e->items.push_back(std::move(exp));
    return seal(std::move(e));
  }

  ExprPtr parse_postfix() {
    Span b = cur().span;
    ExprPtr e = parse_atom();
    for (;;) {
      if (at_op(".")) {
        take();
        Span ns = cur().span;
        std::string name = expect_name("an attribute name after '.'");
        auto a = make(ExprKind::Attribute, span_from(b));
        a->name = name;
        a->op_span = ns;
        a->items.push_back(std::move(e));
        e = seal(std::move(a));
      } else if (at_op("(")) {
        take();
        auto c = make(ExprKind::Call, b);
        c->op_span = e->kind == ExprKind::Attribute ? e->op_span : e->span;
        c->items.push_back(std::move(e));
        parse_call_args(*c);
        c->span = span_from(b);
        e = seal(std::move(c));
      } else if (at_op("[")) {
        take();
        auto s = make(ExprKind::Subscript, b);
        s->items.push_back(std::move(e));
        s->items.push_back(parse_subscript_list());
        expect_op("]", "to close the subscript");
        s->span = span_from(b);
        e = seal(std::move(s));
      } else {
        return e;
      }
    }
  }

  void parse_call_args(Expr& call) {
    bool seen_keyword = false;
    while (!at_op(")")) {
      if (at(Tok::Name) && peek_tok().is_op("=")) {
        Keyword k;
        k.span = cur().span;
        k.name = take().text;
        take();
        k.value = parse_test();
        for (const Keyword& other : call.keywords) {
          if (other.name == k.name) error(k.span, "keyword argument '" + k.name + "' repeated");
        }
        call.keywords.push_back(std::move(k));
        seen_keyword = true;
      } else {
        if (at_op("**")) error(cur().span, "**kwargs arguments are not supported yet");
        Span as = cur().span;
        ExprPtr arg = parse_test_or_star(true);
        if (at_kw("for")) error(cur().span, "generator expressions are not supported yet");
        if (seen_keyword) error(as, "positional argument follows keyword argument");
        call.items.push_back(std::move(arg));
      }
      if (!accept_op(",")) break;
    }
    expect_op(")", "to close the argument list");
  }

  // One subscript element: an expression or a slice `a:b:c`.
  ExprPtr parse_subscript() {
    Span b = cur().span;
    ExprPtr lower;
    if (!at_op(":")) {
      lower = parse_test();
      if (!at_op(":")) return lower;
    }
    take();  // ':'
    auto s = make(ExprKind::Slice, b);
    ExprPtr upper, step;
    if (!at_op(":") && !at_op("]") && !at_op(",")) upper = parse_test();
    if (accept_op(":")) {
      if (!at_op("]") && !at_op(",")) step = parse_test();
    }
    s->items.push_back(std::move(lower));
    s->items.push_back(std::move(upper));
    s->items.push_back(std::move(step));
    s->span = span_from(b);
    return seal(std::move(s));
  }

  ExprPtr parse_subscript_list() {
    Span b = cur().span;
    ExprPtr first = parse_subscript();
    if (!at_op(",")) return first;
    auto t = make(ExprKind::Tuple, b);
    t->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op("]")) break;
      t->items.push_back(parse_subscript());
    }
    t->span = span_from(b);
    return seal(std::move(t));
  }

  ExprPtr parse_atom() {
    const Token& tok = cur();
    Span b = tok.span;
    switch (tok.kind) {
      case Tok::Name: {
        auto e = make(ExprKind::Name, b);
        e->name = take().text;
        return e;
      }
      case Tok::Int: {
        auto e = make(ExprKind::Int, b);
        e->ival = take().ival;
        return e;
      }
      case Tok::Float: {
        auto e = make(ExprKind::Float, b);
        e->fval = take().fval;
        return e;
      }
      case Tok::String: {
        auto e = make(ExprKind::Str, b);
        e->name = take().text;
        while (at(Tok::String)) e->name += take().text;  // implicit concatenation
        e->span = span_from(b);
        return e;
      }
      case Tok::Keyword: {
        if (tok.text == "None" || tok.text == "True" || tok.text == "False") {
          auto e = make(tok.text == "None" ? ExprKind::None : ExprKind::Bool, b);
          e->ival = tok.text == "True";
          take();
          return e;
        }
        break;
      }
      case Tok::Op: {
        if (tok.text == "...") {
          take();
          return make(ExprKind::Ellipsis, b);
        }
        if (tok.text == "(") return parse_paren();
        if (tok.text == "[") return parse_list();
        if (tok.text == "{") return parse_dict();
        break;
      }
      default:
        break;
    }
    error(tok.span, "expected an expression, got " + describe(tok));
  }

  ExprPtr parse_paren() {
    Span b = take().span;
    if (accept_op(")")) return make(ExprKind::Tuple, span_from(b));
    ExprPtr first = parse_test_or_star(true);
    if (at_kw("for")) return parse_comprehension(b, ")", "generator expressions");
    if (accept_op(")")) return first;  // parentheses only group
    auto t = make(ExprKind::Tuple, b);
    t->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (at_op(")")) break;
      t->items.push_back(parse_test_or_star(true));
    }
    expect_op(")", "to close the parenthesis");
    t->span = span_from(b);
    return seal(std::move(t));
  }

  ExprPtr parse_list() {
    Span b = take().span;
    auto l = make(ExprKind::List, b);
    if (!at_op("]")) {
      l->items.push_back(parse_test_or_star(true));
      if (at_kw("for")) return parse_comprehension(b, "]", "list comprehensions");
      while (accept_op(",")) {
        if (at_op("]")) break;
        l->items.push_back(parse_test_or_star(true));
      }
    }
    expect_op("]", "to close the list");
    l->span = span_from(b);
    return seal(std::move(l));
  }

  ExprPtr parse_comprehension(const Span& b, const char* close, const char* what) {
    // Skip `for ... in ... if ...` up to the closing bracket.
    int depth = 0;
    while (!at(Tok::End)) {
      if (at_op("(") || at_op("[") || at_op("{")) ++depth;
      if (at_op(")") || at_op("]") || at_op("}")) {
        if (depth == 0) break;
        --depth;
      }
      take();
    }
    expect_op(close, "to close the comprehension");
    auto e = make(ExprKind::Unsupported, span_from(b));
    e->name = what;
    return e;
  }

  ExprPtr parse_dict() {
    Span b = take().span;
    auto d = make(ExprKind::Dict, b);
    while (!at_op("}")) {
      d->items.push_back(parse_test());
      if (at_kw("for")) return parse_comprehension(b, "}", "dict comprehensions");
      if (accept_op(":")) d->items.push_back(parse_test());
      if (!accept_op(",")) break;
    }
    expect_op("}", "to close the dict");
    d->span = span_from(b);
    auto e = make(ExprKind::Unsupported, d->span);
    e->name = "dict and set literals";
    return e;
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int expr_depth_ = 0;   // open parse_test / unary / power levels
  int block_depth_ = 0;  // open blocks and elif levels
  struct {
    int line = 0, col = 0;
  } prev_end_;
  Diagnostics& diags_;
};

}  // namespace

std::shared_ptr<Module> parse(std::shared_ptr<const SourceFile> file, Diagnostics& diags) {
  auto m = std::make_shared<Module>();
  m->file = file;
  Parser p(tokenize(*file, diags), diags);
  p.parse_module(*m);
  return m;
}

}  // namespace kiln::frontend
