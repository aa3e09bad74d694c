// AST printing: a one-line source-like form for expressions (used in messages)
// and the indented tree dump behind `kiln dump --stage=ast`.
#include <cmath>
#include <sstream>

#include "frontend/ast.h"

namespace kiln::frontend {

namespace {

std::string float_str(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "'";
}

void join(std::ostringstream& os, const std::vector<ExprPtr>& items, size_t from = 0) {
  for (size_t i = from; i < items.size(); ++i) {
    if (i > from) os << ", ";
    os << (items[i] ? dump_expr(*items[i]) : "");
  }
}

}  // namespace

std::string dump_expr(const Expr& e) {
  std::ostringstream os;
  switch (e.kind) {
    case ExprKind::Name:
      os << e.name;
      break;
    case ExprKind::Int:
      os << e.ival;
      break;
    case ExprKind::Float:
      os << float_str(e.fval);
      break;
    case ExprKind::Str:
      os << quote(e.name);
      break;
    case ExprKind::Bool:
      os << (e.ival ? "True" : "False");
      break;
    case ExprKind::None:
      os << "None";
      break;
    case ExprKind::Ellipsis:
      os << "...";
      break;
    case ExprKind::Tuple:
      os << "(";
      join(os, e.items);
      if (e.items.size() == 1) os << ",";
      os << ")";
      break;
    case ExprKind::List:
      os << "[";
      join(os, e.items);
      os << "]";
      break;
    case ExprKind::Dict:
      os << "{...}";
      break;
    case ExprKind::Attribute:
      os << dump_expr(*e.items[0]) << "." << e.name;
      break;
    case ExprKind::Call:
      os << dump_expr(*e.items[0]) << "(";
      join(os, e.items, 1);
      for (size_t i = 0; i < e.keywords.size(); ++i) {
        if (i || e.items.size() > 1) os << ", ";
        os << e.keywords[i].name << "=" << dump_expr(*e.keywords[i].value);
      }
      os << ")";
      break;
    case ExprKind::Subscript: {
      os << dump_expr(*e.items[0]) << "[";
      const Expr& idx = *e.items[1];
      if (idx.kind == ExprKind::Tuple && !idx.items.empty()) {
        join(os, idx.items);
      } else {
        os << dump_expr(idx);
      }
      os << "]";
      break;
    }
    case ExprKind::Slice:
      if (e.items[0]) os << dump_expr(*e.items[0]);
      os << ":";
      if (e.items[1]) os << dump_expr(*e.items[1]);
      if (e.items[2]) os << ":" << dump_expr(*e.items[2]);
      break;
    case ExprKind::BinOp:
      os << "(" << dump_expr(*e.items[0]) << " " << e.op << " " << dump_expr(*e.items[1]) << ")";
      break;
    case ExprKind::UnaryOp:
      os << "(" << e.op << (e.op == "not" ? " " : "") << dump_expr(*e.items[0]) << ")";
      break;
    case ExprKind::Compare:
      os << "(" << dump_expr(*e.items[0]);
      for (size_t i = 0; i < e.ops.size(); ++i)
        os << " " << e.ops[i] << " " << dump_expr(*e.items[i + 1]);
      os << ")";
      break;
    case ExprKind::BoolOp:
      os << "(";
      for (size_t i = 0; i < e.items.size(); ++i) {
        if (i) os << " " << e.op << " ";
        os << dump_expr(*e.items[i]);
      }
      os << ")";
      break;
    case ExprKind::IfExp:
      os << "(" << dump_expr(*e.items[0]) << " if " << dump_expr(*e.items[1]) << " else "
         << dump_expr(*e.items[2]) << ")";
      break;
    case ExprKind::Starred:
      os << "*" << dump_expr(*e.items[0]);
      break;
    case ExprKind::Unsupported:
      os << "<" << e.name << ">";
      break;
  }
  return os.str();
}

namespace {

class AstDumper {
 public:
  std::string run(const Module& m) {
    os_ << "Module " << m.file->filename() << "\n";
    for (const StmtPtr& s : m.globals) stmt(*s, 1);
    for (const FunctionDef& f : m.functions) def(f, 1);
    return os_.str();
  }

 private:
  void indent(int d) { os_ << std::string(size_t(d) * 2, ' '); }
  static std::string at(const Span& s) {
    return " @" + std::to_string(s.line) + ":" + std::to_string(s.col);
  }

  void def(const FunctionDef& f, int d) {
    indent(d);
    os_ << "FunctionDef " << f.name << at(f.span) << "\n";
    for (const ExprPtr& dec : f.decorators) {
      indent(d + 1);
      os_ << "Decorator " << dump_expr(*dec) << "\n";
    }
    for (const Param& p : f.params) {
      indent(d + 1);
      os_ << "Param " << p.name;
      if (p.annotation) os_ << ": " << dump_expr(*p.annotation);
      if (p.default_value) os_ << " = " << dump_expr(*p.default_value);
      os_ << at(p.span) << "\n";
    }
    if (f.returns) {
      indent(d + 1);
      os_ << "Returns " << dump_expr(*f.returns) << "\n";
    }
    for (const StmtPtr& s : f.body) stmt(*s, d + 1);
  }

  void field(const char* name, const ExprPtr& e, int d) {
    if (!e) return;
    indent(d);
    os_ << name << ": ";
    expr(*e, d);
  }

  void expr(const Expr& e, int d) {
    static const char* const names[] = {
        "Name",  "Int",     "Float",   "Str",       "Bool",  "None",      "Ellipsis",
        "Tuple", "List",    "Dict",    "Attribute", "Call",  "Subscript", "Slice",
        "BinOp", "UnaryOp", "Compare", "BoolOp",    "IfExp", "Starred",   "Unsupported"};
    os_ << names[int(e.kind)];
    switch (e.kind) {
      case ExprKind::Name:
      case ExprKind::Int:
      case ExprKind::Float:
      case ExprKind::Str:
      case ExprKind::Bool:
      case ExprKind::None:
      case ExprKind::Ellipsis:
      case ExprKind::Slice:
      case ExprKind::Unsupported:
        os_ << " " << dump_expr(e) << at(e.span) << "\n";
        return;
      case ExprKind::Attribute:
        os_ << " ." << e.name;
        break;
      case ExprKind::BinOp:
      case ExprKind::UnaryOp:
      case ExprKind::BoolOp:
        os_ << " " << e.op;
        break;
      case ExprKind::Compare:
        for (const std::string& o : e.ops) os_ << " " << o;
        break;
      default:
        break;
    }
    os_ << at(e.span) << "\n";
    for (const ExprPtr& c : e.items) {
      indent(d + 1);
      if (c) {
        expr(*c, d + 1);
      } else {
        os_ << "-\n";
      }
    }
    for (const Keyword& k : e.keywords) {
      indent(d + 1);
      os_ << "Keyword " << k.name << "=";
      expr(*k.value, d + 1);
    }
  }

  void block(const char* name, const std::vector<StmtPtr>& b, int d) {
    if (b.empty()) return;
    indent(d);
    os_ << name << ":\n";
    for (const StmtPtr& s : b) stmt(*s, d + 1);
  }

  void stmt(const Stmt& s, int d) {
    static const char* const names[] = {
        "Expr", "Assign", "AugAssign", "AnnAssign", "Return", "If",  "For",        "While",
        "Pass", "Break",  "Continue",  "Assert",    "Import", "Def", "Unsupported"};
    indent(d);
    os_ << names[int(s.kind)];
    if (s.kind == StmtKind::AugAssign) os_ << " " << s.op << "=";
    if (!s.name.empty()) os_ << " " << s.name;
    os_ << at(s.span) << "\n";
    for (const ExprPtr& t : s.targets) field("target", t, d + 1);
    field("annotation", s.annotation, d + 1);
    field("test", s.test, d + 1);
    field("value", s.value, d + 1);
    block("body", s.body, d + 1);
    block("orelse", s.orelse, d + 1);
  }

  std::ostringstream os_;
};

}  // namespace

std::string dump_ast(const Module& m) {
  return AstDumper().run(m);
}

}  // namespace kiln::frontend
