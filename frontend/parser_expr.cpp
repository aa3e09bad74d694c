// Expressions for the parser (see parser_internal.h): one method per Python
// precedence level, from parse_test (conditional expressions, lambda) down to
// atoms, with calls, subscripts and slices as postfix operators.
#include <string>
#include <vector>

#include "frontend/parser_internal.h"

namespace kiln::frontend::parser_detail {

ExprPtr Parser::parse_testlist(bool allow_star) {
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

ExprPtr Parser::parse_test_or_star(bool allow_star) {
  if (allow_star && at_op("*")) {
    Span b = take().span;
    auto e = make(ExprKind::Starred, b);
    e->items.push_back(parse_bitor());
    e->span = span_from(b);
    return seal(std::move(e));
  }
  return parse_test();
}

ExprPtr Parser::parse_test() {
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

ExprPtr Parser::parse_boolop(const char* kw, ExprPtr (Parser::*next)()) {
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

ExprPtr Parser::parse_not() {
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

ExprPtr Parser::parse_comparison() {
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

ExprPtr Parser::parse_binary_level(const std::vector<const char*>& ops, ExprPtr (Parser::*next)()) {
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

ExprPtr Parser::parse_term() {
  return parse_binary_level({"*", "/", "//", "%", "@"}, &Parser::parse_factor);
}

ExprPtr Parser::parse_factor() {
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

ExprPtr Parser::parse_power() {
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

ExprPtr Parser::parse_postfix() {
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

void Parser::parse_call_args(Expr& call) {
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

ExprPtr Parser::parse_subscript() {
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

ExprPtr Parser::parse_subscript_list() {
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

ExprPtr Parser::parse_atom() {
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
      bool fstring = tok.ival == 1;
      e->name = take().text;
      while (at(Tok::String)) {  // implicit concatenation
        fstring = fstring || cur().ival == 1;
        e->name += take().text;
      }
      e->span = span_from(b);
      if (fstring) {  // parsed so that unreached code may hold them
        e->kind = ExprKind::Unsupported;
        e->name = "f-strings";
      }
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

ExprPtr Parser::parse_paren() {
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

ExprPtr Parser::parse_list() {
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

ExprPtr Parser::parse_comprehension(const Span& b, const char* close, const char* what) {
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

ExprPtr Parser::parse_dict() {
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

}  // namespace kiln::frontend::parser_detail
