// Recursive-descent parser for the graph IR text form (grammar in docs/ir.md).
//
// Exactly one graph per text. The parser checks what only text can get wrong
// (syntax, names, types, attribute literals, unknown ops) and builds nodes with
// Graph::add_node and the types as written: whether those types agree with
// inference is verify()'s question, so a mistyped graph can still be read and
// diagnosed. Node locations come only from "# file:line:col" comments, which
// keeps print -> parse -> print exact.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/text_lexer.h"
#include "kiln/error.h"

namespace kiln::ir {

namespace {

using text::Lexed;
using text::SourceText;
using text::Tok;
using text::Token;

class Parser {
 public:
  Parser(const SourceText& src, Lexed lexed)
      : src_(src), toks_(std::move(lexed.tokens)), locs_(std::move(lexed.locs)) {}

  std::unique_ptr<Graph> parse() {
    if (!peek().is(Tok::Ident, "graph")) fail(peek(), "expected 'graph', got " + peek().describe());
    next();
    expect_punct('@', "after 'graph'");
    const Token& name = next();
    if (name.kind != Tok::Ident && name.kind != Tok::String) {
      fail(name, "expected a graph name after '@', got " + name.describe());
    }
    graph_ = std::make_unique<Graph>(name.text);
    parse_params();
    expect_punct('{', "after the graph's parameters");
    while (true) {
      const Token& t = peek();
      if (t.is(Tok::Ident, "return")) break;
      if (t.punct('}')) fail(t, "missing 'return' before the graph's closing '}'");
      if (t.kind == Tok::End) fail(t, "unexpected end of input: missing 'return' and '}'");
      if (t.kind == Tok::ValueName || t.kind == Tok::Ident) {
        parse_node();
      } else {
        fail(t, "expected a node ('%name: type = op(...)') or 'return', got " + t.describe());
      }
    }
    parse_return();
    if (peek().kind != Tok::End) {
      fail(peek(), "unexpected " + peek().describe() +
                       " after the graph's closing '}' (a text holds exactly one graph)");
    }
    return std::move(graph_);
  }

 private:
  // --- token helpers --------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    src_.error(at.line, at.col, message);
  }
  void expect_punct(char c, const std::string& context) {
    if (!peek().punct(c)) {
      fail(peek(), std::string("expected '") + c + "' " + context + ", got " + peek().describe());
    }
    next();
  }
  // After a list element: ',' continues (returns true), `close` ends the list.
  bool list_continues(char close, const std::string& after) {
    const Token& t = peek();
    if (t.punct(',')) {
      next();
      return true;
    }
    if (t.punct(close)) {
      next();
      return false;
    }
    fail(t,
         std::string("expected ',' or '") + close + "' after " + after + ", got " + t.describe());
  }

  // --- values ---------------------------------------------------------------------
  // Checks that a result or parameter name is new (in the graph and in `pending`).
  void check_new_name(const Token& t, const std::vector<std::string>& pending) const {
    auto it = defined_.find(t.text);
    bool again = std::find(pending.begin(), pending.end(), t.text) != pending.end();
    if (it != defined_.end()) {
      fail(t, "redefinition of value '%" + t.text + "' (first defined on line " +
                  std::to_string(it->second.line) + ")");
    }
    if (again) fail(t, "redefinition of value '%" + t.text + "' in the same node");
  }
  void define(const Token& t, Value* v) { defined_.emplace(t.text, Def{v, t.line}); }
  Value* use() {
    const Token& t = next();
    if (t.kind != Tok::ValueName) fail(t, "expected a value ('%name'), got " + t.describe());
    auto it = defined_.find(t.text);
    if (it == defined_.end()) fail(t, "use of undefined value '%" + t.text + "'");
    return it->second.value;
  }

  void parse_params() {
    expect_punct('(', "after the graph name");
    if (peek().punct(')')) {
      next();
      return;
    }
    do {
      const Token& name = next();
      if (name.kind != Tok::ValueName) {
        fail(name, "expected a parameter ('%name: type'), got " + name.describe());
      }
      check_new_name(name, {});
      expect_punct(':', "after parameter '%" + name.text + "'");
      Type type = parse_type();
      define(name, graph_->add_input(name.text, std::move(type)));
    } while (list_continues(')', "parameter"));
  }

  // --- types ----------------------------------------------------------------------
  Type parse_type() {
    const Token& t = next();
    if (t.kind != Tok::Ident) {
      fail(t, "expected a type (like f32[2, N], int, float, bool, none), got " + t.describe());
    }
    if (!peek().punct('[')) {
      if (t.text == "int") return Type::int_();
      if (t.text == "float") return Type::float_();
      if (t.text == "bool") return Type::bool_();
      if (t.text == "none") return Type::none();
      if (parse_dtype(t.text)) fail(peek(), "expected '[' and dims after dtype '" + t.text + "'");
      fail(t, "unknown type '" + t.text +
                  "' (expected a dtype with dims like f32[2, N], or int, "
                  "float, bool, none)");
    }
    std::optional<DType> dtype = parse_dtype(t.text);
    if (!dtype) fail(t, "unknown dtype '" + t.text + "'");
    next();  // '['
    Dims dims;
    if (peek().punct(']')) {
      next();
    } else {
      do {
        const Token& d = next();
        if (d.kind == Tok::Ident) {
          dims.push_back(Dim::sym(d.text));
        } else if (d.kind == Tok::Int && d.text[0] != '-') {
          dims.emplace_back(parse_int(d));
        } else {
          fail(d, "expected a dim (a size >= 0 or a symbol like N), got " + d.describe());
        }
      } while (list_continues(']', "dim"));
    }
    Device device;
    if (peek().punct('@')) {
      next();
      device = parse_device();
    }
    try {
      return Type::tensor(*dtype, std::move(dims), device);
    } catch (const Error& e) {
      fail(t, e.what());  // rank or size past Kiln's limits, at the type
    }
  }

  Device parse_device() {
    const Token& t = next();
    if (t.is(Tok::Ident, "cpu")) return Device::cpu();
    if (!t.is(Tok::Ident, "cuda")) fail(t, "expected a device (cpu, cuda:N), got " + t.describe());
    int index = 0;
    if (peek().punct(':')) {
      next();
      const Token& i = next();
      if (i.kind != Tok::Int || i.text[0] == '-' || i.text.size() > 6) {
        fail(i, "expected a device index after 'cuda:', got " + i.describe());
      }
      index = static_cast<int>(parse_int(i));
    }
    return Device::cuda(index);
  }

  // --- attributes -----------------------------------------------------------------
  int64_t parse_int(const Token& t) const {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (errno == ERANGE || *end != '\0') fail(t, "integer " + t.text + " is out of range");
    return static_cast<int64_t>(v);
  }
  static double parse_float_text(const std::string& s) {
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
    return std::strtod(s.c_str(), nullptr);
  }
  static bool is_float_token(const Token& t) {
    return t.kind == Tok::Float || (t.kind == Tok::Ident && (t.text == "inf" || t.text == "nan"));
  }

  AttrValue parse_attr_value() {
    const Token& t = peek();
    if (t.kind == Tok::Int) return parse_int(next());
    if (is_float_token(t)) return parse_float_text(next().text);
    if (t.kind == Tok::String) return next().text;
    if (t.punct('[')) return parse_list();
    if (t.kind == Tok::Ident) {
      std::optional<AttrValue> word;
      if (t.text == "none") word = NoneAttr{};
      if (t.text == "true") word = true;
      if (t.text == "false") word = false;
      if (t.text == "tensor" && peek(1).punct('<')) return parse_tensor();
      if (std::optional<DType> d = parse_dtype(t.text)) word = *d;
      if (word) {
        next();
        return *word;
      }
    }
    const std::string kinds = "none, true, 3, 2.5, \"s\", [1, 2], f32, tensor<...>[...]";
    fail(t, "expected an attribute value (" + kinds + "), got " + t.describe());
  }

  AttrValue parse_list() {
    next();  // '['
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool any_float = false;
    if (peek().punct(']')) {
      next();
      return ints;
    }
    do {
      const Token& t = next();
      if (t.kind == Tok::Int) {
        int64_t v = parse_int(t);
        ints.push_back(v);
        floats.push_back(static_cast<double>(v));
      } else if (is_float_token(t)) {
        any_float = true;
        floats.push_back(parse_float_text(t.text));
      } else {
        fail(t, "expected a number in the list, got " + t.describe());
      }
    } while (list_continues(']', "list element"));
    if (any_float) return floats;
    return ints;
  }

  AttrValue parse_tensor() {
    const Token& start = next();  // 'tensor'
    next();                       // '<'
    const Token& dt = next();
    std::optional<DType> dtype = dt.kind == Tok::Ident ? parse_dtype(dt.text) : std::nullopt;
    if (!dtype) fail(dt, "expected a dtype in tensor<...>, got " + dt.describe());
    expect_punct('[', "after the tensor's dtype");
    Shape shape;
    if (peek().punct(']')) {
      next();
    } else {
      do {
        const Token& d = next();
        if (d.kind != Tok::Int || d.text[0] == '-') {
          fail(d, "expected a static size in tensor<...>, got " + d.describe());
        }
        shape.push_back(parse_int(d));
      } while (list_continues(']', "tensor size"));
    }
    expect_punct('>', "after the tensor's type");
    const Token& open = peek();
    expect_punct('[', "before the tensor's values");
    int64_t numel = 1;
    for (int64_t s : shape) {
      if (s != 0 && numel > (int64_t{1} << 40) / s) fail(start, "tensor attribute is too large");
      numel *= s;
    }
    std::string type_str = std::string("tensor<") + dtype_name(*dtype) + shape_str(shape) + ">";
    // Values are read before allocating, so a huge shape with few values fails cheaply.
    std::vector<double> floats;
    std::vector<int64_t> ints;
    if (peek().punct(']')) {
      next();
    } else {
      do {
        const Token& v = next();
        if (*dtype == DType::Bool) {
          if (!v.is(Tok::Ident, "true") && !v.is(Tok::Ident, "false")) {
            fail(v, "expected true or false in " + type_str + ", got " + v.describe());
          }
          ints.push_back(v.text == "true" ? 1 : 0);
        } else if (is_floating(*dtype)) {
          if (v.kind == Tok::Int) {
            floats.push_back(static_cast<double>(parse_int(v)));
          } else if (is_float_token(v)) {
            floats.push_back(parse_float_text(v.text));
          } else {
            fail(v, "expected a number in " + type_str + ", got " + v.describe());
          }
        } else {
          if (v.kind != Tok::Int) {
            fail(v, "expected an integer in " + type_str + ", got " + v.describe());
          }
          ints.push_back(parse_int(v));
        }
      } while (list_continues(']', "tensor value"));
    }
    int64_t count = static_cast<int64_t>(floats.size() + ints.size());
    if (count != numel) {
      fail(open, type_str + " needs " + std::to_string(numel) + " value(s), got " +
                     std::to_string(count));
    }
    Tensor t = Tensor::empty(shape, *dtype);
    Tensor flat = t.view_as_strided({numel}, {1}, 0);
    for (int64_t i = 0; i < numel; ++i) {
      std::vector<int64_t> idx{i};
      if (is_floating(*dtype)) {
        flat.set(idx, floats[static_cast<size_t>(i)]);
      } else {
        flat.set_int(idx, ints[static_cast<size_t>(i)]);
      }
    }
    return t;
  }

  Attrs parse_attrs() {
    Attrs attrs;
    next();  // '{'
    if (peek().punct('}')) {
      next();
      return attrs;
    }
    do {
      const Token& name = next();
      if (name.kind != Tok::Ident) fail(name, "expected an attribute name, got " + name.describe());
      if (attrs.has(name.text)) fail(name, "duplicate attribute '" + name.text + "'");
      expect_punct('=', "after attribute '" + name.text + "'");
      attrs.set(name.text, parse_attr_value());
    } while (list_continues('}', "attribute"));
    return attrs;
  }

  // --- nodes ----------------------------------------------------------------------
  void parse_node() {
    std::vector<Token> results;
    std::vector<std::string> pending;
    std::vector<Type> types;
    if (peek().kind == Tok::ValueName) {
      while (true) {
        const Token& name = next();
        if (name.kind != Tok::ValueName)
          fail(name, "expected a result ('%name: type'), got " + name.describe());
        check_new_name(name, pending);
        pending.push_back(name.text);
        results.push_back(name);
        expect_punct(':', "after result '%" + name.text + "'");
        types.push_back(parse_type());
        if (peek().punct('=')) break;
        if (!peek().punct(',')) {
          fail(peek(), "expected ',' or '=' after the type of '%" + name.text + "', got " +
                           peek().describe());
        }
        next();
      }
      next();  // '='
    }
    const Token& op = next();
    if (op.kind != Tok::Ident) fail(op, "expected an op name, got " + op.describe());
    if (!OpRegistry::global().find(op.text)) {
      std::string msg = "unknown op '" + op.text + "'";
      std::vector<std::string> near = OpRegistry::global().nearest(op.text);
      for (size_t i = 0; i < near.size(); ++i) {
        msg += (i == 0                 ? " (did you mean '"
                : i + 1 == near.size() ? " or '"
                                       : ", '") +
               near[i] + "'";
      }
      if (!near.empty()) msg += "?)";
      fail(op, msg);
    }
    expect_punct('(', "after op name '" + op.text + "'");
    std::vector<Value*> inputs;
    if (peek().punct(')')) {
      next();
    } else {
      do {
        inputs.push_back(use());
      } while (list_continues(')', "operand"));
    }
    Attrs attrs;
    if (peek().punct('{')) attrs = parse_attrs();
    SourceLoc loc;
    auto it = locs_.find(toks_[pos_ - 1].line);
    if (it != locs_.end()) loc = it->second;
    Node* node = graph_->add_node(op.text, std::move(inputs), std::move(attrs), types, loc);
    for (size_t i = 0; i < results.size(); ++i) {
      node->output(i)->set_name(results[i].text);
      define(results[i], node->output(i));
    }
  }

  void parse_return() {
    next();  // 'return'
    std::vector<Value*> outputs;
    if (peek().punct('}')) {
      next();
    } else {
      do {
        outputs.push_back(use());
      } while (list_continues('}', "return value"));
    }
    graph_->set_outputs(std::move(outputs));
  }

  struct Def {
    Value* value;
    int line;
  };

  const SourceText& src_;
  std::vector<Token> toks_;
  std::map<int, SourceLoc> locs_;
  size_t pos_ = 0;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Def> defined_;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename) {
  SourceText src(text, filename);
  return Parser(src, text::lex(src)).parse();
}

}  // namespace kiln::ir
