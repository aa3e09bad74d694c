// Recursive-descent parser for the Python subset (see docs/language.md), with
// Python's operator precedence. After a syntax error it records a diagnostic,
// skips to the end of the statement (and its indented block) and goes on, so
// one run reports every independent syntax error. Constructs that Kiln does not
// run (lambda, comprehensions, dicts, class, with, try, ...) are parsed into
// Unsupported nodes so the lowering can reject them with a precise location.
#include <string>

#include "frontend/parser_internal.h"

namespace kiln::frontend {

const FunctionDef* Module::find(const std::string& name) const {
  for (const FunctionDef& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace parser_detail {

FunctionDef Parser::parse_def() {
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
    if (at_op("/")) {  // positional-only marker: binding by position works already
      take();
      if (!accept_op(",")) break;
      continue;
    }
    if (at_op("*") || at_op("**")) {
      Span star = take().span;
      if (at_op(",") || at_op(")")) {  // bare `*`: the parameters after it are keyword-only
        if (!accept_op(",")) break;
        continue;
      }
      // `*args` / `**kwargs`: Python syntax that Kiln cannot bind yet. The error
      // is reported only when this def is compiled (chosen or called).
      Span name = cur().span;
      expect_name("a parameter name");
      if (accept_op(":")) parse_test();
      f.deferred.push_back({{star.line, star.col, name.end_line, name.end_col},
                            "*args and **kwargs parameters are not supported yet",
                            ""});
      if (!accept_op(",")) break;
      continue;
    }
    p.span = cur().span;
    p.name = expect_name("a parameter name");
    for (const Param& q : f.params) {
      if (q.name == p.name) {  // CPython's SyntaxError text
        diags_.error(p.span, "duplicate argument '" + p.name + "' in function definition");
        break;
      }
    }
    if (accept_op(":")) p.annotation = string_annotation(parse_test());
    if (accept_op("=")) p.default_value = parse_test();
    f.params.push_back(std::move(p));
    if (!accept_op(",")) break;
  }
  expect_op(")", "to close the parameter list");
  if (accept_op("->")) f.returns = string_annotation(parse_test());
  f.body = parse_block("after the function signature");
  return f;
}

std::vector<StmtPtr> Parser::parse_block(const char* context) {
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

StmtPtr Parser::parse_statement() {
  std::vector<StmtPtr> out;
  parse_statement_into(out);
  if (out.empty()) return nullptr;
  // Only the first statement of a `a; b` line is returned at module level;
  // the others are rare and follow it.
  return std::move(out.front());
}

void Parser::parse_statement_into(std::vector<StmtPtr>& out) {
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

StmtPtr Parser::parse_if() {
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

void Parser::parse_simple_line(std::vector<StmtPtr>& out) {
  out.push_back(parse_small());
  while (accept_op(";")) {
    if (at(Tok::Newline)) break;
    out.push_back(parse_small());
  }
  if (!accept(Tok::Newline) && !at(Tok::End)) {
    error(cur().span, "expected end of line, got " + describe(cur()));
  }
}

StmtPtr Parser::stmt(StmtKind k, const Span& b) {
  auto s = std::make_unique<Stmt>();
  s->kind = k;
  s->span = b;
  return s;
}

StmtPtr Parser::parse_small() {
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
    // import a.b as c / from a import b, c — nothing to run; the names it
    // binds are kept for messages ("'np' is the module 'numpy' ...").
    auto s = stmt(StmtKind::Import, b);
    std::string from;
    if (accept_kw("from")) {
      while (at(Tok::Name) || at_op(".")) from += take().text;
      if (!accept_kw("import")) error(cur().span, "expected 'import', got " + describe(cur()));
    } else {
      take();
    }
    bool paren = accept_op("(");
    while (at(Tok::Name) || at_op("*")) {
      std::string path;
      while (at(Tok::Name) || at_op(".") || at_op("*")) path += take().text;
      std::string bound = path.substr(0, path.find('.'));
      if (accept_kw("as"))
        bound = expect_name("a name after 'as'");
      else if (!from.empty())
        bound = path;
      s->imports.push_back({bound, from.empty() ? path : from + "." + path});
      if (!accept_op(",")) break;
    }
    if (paren) expect_op(")", "to close the import list");
    while (!at(Tok::Newline) && !at(Tok::End) && !at_op(";")) take();
    return s;
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

ExprPtr Parser::parse_target_list() {
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

}  // namespace parser_detail

namespace {

void set_spans(Expr& e, const Span& at) {
  e.span = e.op_span = at;
  for (ExprPtr& i : e.items) {
    if (i) set_spans(*i, at);
  }
  for (Keyword& k : e.keywords) {
    if (k.value) set_spans(*k.value, at);
  }
}

}  // namespace

// A string annotation (`x: "Tensor"`, PEP 484's forward references, and what
// `from __future__ import annotations` code and typing tools write) stands for
// the expression it holds: parsed here, located at the string.
ExprPtr parser_detail::Parser::string_annotation(ExprPtr a) {
  if (!a || a->kind != ExprKind::Str) return a;
  auto file = std::make_shared<SourceFile>(a->name, "<annotation>");
  Diagnostics inner(file);
  std::vector<Token> toks = tokenize(*file, inner);
  ExprPtr e;
  if (inner.count() == 0) {
    Parser sub(std::move(toks), inner);
    try {
      e = sub.parse_test();
      if (!sub.at(Tok::Newline) && !sub.at(Tok::End)) e = nullptr;
    } catch (const SyntaxAbort&) {
      e = nullptr;
    }
  }
  if (!e || inner.count() != 0) {
    diags_.error(a->span, "cannot read the annotation \"" + a->name + "\" as a type");
    return a;
  }
  set_spans(*e, a->span);
  return e;
}

std::shared_ptr<Module> parse(std::shared_ptr<const SourceFile> file, Diagnostics& diags) {
  auto m = std::make_shared<Module>();
  m->file = file;
  std::vector<Token> tokens = tokenize(*file, diags);
  // A TabError ends the run as in CPython: the blocks after it are guesses,
  // and parsing them would only add follow-on errors ("expected an indented
  // block", "unexpected indent").
  for (const Diagnostic& d : diags.list()) {
    if (d.message.rfind("TabError", 0) == 0) return m;
  }
  parser_detail::Parser p(std::move(tokens), diags);
  p.parse_module(*m);
  return m;
}

}  // namespace kiln::frontend
