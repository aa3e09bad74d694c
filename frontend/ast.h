// The script AST: a plain tree of expression and statement nodes, each with
// the source span it came from. One struct per category (Expr, Stmt) with a
// kind tag keeps the tree small and easy to walk; fields unused by a kind stay
// empty. Produced by parse() (parser.cpp), read by the lowering (lower_*.cpp).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/diagnostics.h"
#include "frontend/frontend.h"

namespace kiln::frontend {

enum class ExprKind {
  Name,   // name
  Int,    // ival
  Float,  // fval
  Str,    // name holds the value
  Bool,   // ival 0/1
  None,
  Ellipsis,
  Tuple,        // items
  List,         // items
  Dict,         // items: key, value, key, value... (parsed to be rejected)
  Attribute,    // items[0] . name
  Call,         // items[0] = callee, items[1..] positional; keywords
  Subscript,    // items[0] [ items[1] ]  (a Tuple index when several)
  Slice,        // items: lower, upper, step (nullptr when omitted)
  BinOp,        // op, items[0], items[1]
  UnaryOp,      // op ("-", "+", "~", "not"), items[0]
  Compare,      // ops[i] between items[i] and items[i+1]
  BoolOp,       // op ("and"/"or"), items
  IfExp,        // items: body, test, orelse
  Starred,      // *items[0]
  Unsupported,  // a construct parsed only to be rejected; name says what
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// Nesting limits. Parsing, lowering, dumping and even destroying the tree all
// recurse on it, so the parser rejects input nested deeper than this instead of
// overflowing the stack (CPython has the same kind of limit: "too many nested
// parentheses"). Sized so the recursion stays far below a default 8 MiB stack
// even under AddressSanitizer, whose frames are several times larger.
inline constexpr int kMaxExprNesting = 200;   // expression tree height and bracket depth
inline constexpr int kMaxBlockNesting = 100;  // nested blocks (and elif chains)

struct Keyword {
  std::string name;
  Span span;  // of the name
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::None;
  Span span;     // whole expression
  Span op_span;  // operator token (BinOp, UnaryOp, Compare) or attribute name
  std::string name;
  std::string op;
  std::vector<std::string> ops;  // Compare
  int64_t ival = 0;
  double fval = 0;
  std::vector<ExprPtr> items;
  std::vector<Keyword> keywords;
  int height = 1;  // levels of the tree below and including this node (set by the parser)
};

enum class StmtKind {
  Expr,       // value
  Assign,     // targets = value  (a = b = value has two targets)
  AugAssign,  // targets[0] op= value
  AnnAssign,  // targets[0]: annotation = value (value may be null)
  Return,     // value (may be null)
  If,         // test, body, orelse
  For,        // targets[0] in value: body
  While,      // test: body (rejected by the lowering)
  Pass,
  Break,
  Continue,
  Assert,       // test, value (message, may be null)
  Import,       // ignored
  Def,          // nested def (rejected by the lowering)
  Unsupported,  // name says what (class, with, try, raise, del, global, ...)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
  StmtKind kind = StmtKind::Pass;
  Span span;  // the first token of the statement to the end of its first line
  std::vector<ExprPtr> targets;
  std::string op;    // AugAssign: "+", "-", ...
  std::string name;  // Unsupported: what it is
  ExprPtr annotation;
  ExprPtr value;
  ExprPtr test;
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;
  std::vector<std::pair<std::string, std::string>> imports;  // Import: (bound name, module)
};

struct Param {
  std::string name;
  Span span;
  ExprPtr annotation;     // may be null
  ExprPtr default_value;  // may be null
};

struct FunctionDef {
  std::string name;
  Span span;  // the `def` keyword through the name
  std::vector<Param> params;
  ExprPtr returns;  // may be null
  std::vector<ExprPtr> decorators;
  std::vector<StmtPtr> body;
  // Errors reported only when this def is compiled (chosen or called), for
  // Python syntax that parses but that Kiln cannot bind (`*args`, `**kwargs`).
  std::vector<Diagnostic> deferred;
};

struct Module {
  std::shared_ptr<const SourceFile> file;
  std::vector<FunctionDef> functions;
  std::vector<StmtPtr> globals;                // module-level statements other than defs
  std::map<std::string, std::string> imports;  // module-level `import`s: bound name -> module

  const FunctionDef* find(const std::string& name) const;
};

// Parses a token stream into a Module; syntax errors go to diags.
std::shared_ptr<Module> parse(std::shared_ptr<const SourceFile> file, Diagnostics& diags);

std::string dump_expr(const Expr& e);  // one-line, source-like form, e.g. "F.linear(x, w)"

}  // namespace kiln::frontend
