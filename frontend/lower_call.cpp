// Calls: argument evaluation, binding to the op table's Python-like signatures
// (positional, keyword, defaults, `*shape` varargs), dispatch of torch.X /
// F.X / tensor methods / Python builtins, functionalized in-place methods
// (`x.add_(y)` -> rebinding x), and inlining of calls to other defs.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "frontend/lower.h"
#include "frontend/op_signature.h"
#include "frontend/scalar_ops.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

struct Table {
  std::vector<OpEntry> entries;
  std::vector<std::vector<SigParam>> sigs;
};

const Table& table() {
  static const Table* t = [] {
    auto* tab = new Table();
    add_math_ops(tab->entries);
    add_nn_ops(tab->entries);
    add_layout_ops(tab->entries);
    add_nn2_ops(tab->entries);
    add_spatial_ops(tab->entries);
    add_index_ops(tab->entries);
    add_shape_ops(tab->entries);
    add_extra_math_ops(tab->entries);
    add_reduce_ops(tab->entries);
    add_selection_ops(tab->entries);
    add_scalar_ops(tab->entries);
    add_special_aliases(tab->entries);  // last: aliases of the torch.X entries above
    for (const OpEntry& e : tab->entries) tab->sigs.push_back(parse_signature(e.sig));
    return tab;
  }();
  return *t;
}

const std::vector<SigParam>& sig_of(const OpEntry* e) {
  return table().sigs[size_t(e - table().entries.data())];
}

std::string spelled(unsigned sp, const std::string& name) {
  if (sp == kTorch) return "torch." + name;
  if (sp == kF) return "F." + name;
  if (sp == kMath) return "math." + name;
  if (sp == kSpecial) return "torch.special." + name;
  if (sp == kMethod) return "torch.ops.aten." + name;
  return "Tensor." + name;
}

}  // namespace

const OpEntry* find_op(unsigned spelling, const std::string& name) {
  for (const OpEntry& e : table().entries) {
    if ((e.spellings & spelling) && e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> op_names(unsigned spelling) {
  std::vector<std::string> out;
  for (const OpEntry& e : table().entries) {
    if (e.spellings & spelling) out.push_back(e.name);
  }
  return out;
}

// --- Bound accessors ------------------------------------------------------------------

const Val& Bound::val(const std::string& name) const {
  auto it = args.find(name);
  KILN_INTERNAL_CHECK(it != args.end(), fn << ": no parameter '" << name << "' in signature");
  return it->second.val;
}
const Span& Bound::span(const std::string& name) const {
  auto it = args.find(name);
  return it != args.end() && it->second.span.line ? it->second.span : call.callee;
}
bool Bound::is_none(const std::string& name) const {
  auto it = args.find(name);
  return it == args.end() || it->second.val.kind == Val::Kind::None;
}
void Bound::fail(const std::string& name, const std::string& message) const {
  L.fail(span(name), fn + ": " + message);
}
void Bound::fail(const std::string& message) const {
  L.fail(call.callee, fn + ": " + message);
}

ir::Value* Bound::tensor(const std::string& name) const {
  const Val& v = val(name);
  if (v.kind == Val::Kind::Poison) throw Abort{};
  if (!v.is_tensor()) fail(name, "argument '" + name + "' must be a Tensor, got " + kind_name(v));
  return v.value;
}
ir::Value* Bound::operand(const std::string& name) const {
  const Val& v = val(name);
  if (v.is_runtime_number()) {
    // Cast as a Python number next to the op's tensor input would be.
    ir::Value* other = nullptr;
    for (const char* n : {"input", "self"}) {
      auto it = args.find(n);
      if (!other && it != args.end() && it->second.val.is_tensor() &&
          !it->second.val.is_runtime_number()) {
        other = it->second.val.value;
      }
    }
    for (const auto& [n, a] : args) {
      if (!other && a.val.is_tensor() && !a.val.is_runtime_number()) other = a.val.value;
    }
    return L.number_operand(v, other, span(name));
  }
  if (!v.is_tensor() && !v.is_number()) {
    fail(name, "argument '" + name + "' must be a Tensor or a number, got " + kind_name(v));
  }
  return L.operand(v, span(name));
}
ir::Value* Bound::opt_tensor(const std::string& name) const {
  if (is_none(name)) return L.constant(Val::none(), call.callee);
  return tensor(name);
}
void Bound::compile_time(const std::string& name, const Val& v) const {
  if (!v.is_runtime_number()) return;
  L.runtime_value_needed(v, span(name), fn + "() argument '" + name + "'",
                         "sizes, dims and options must be static: take sizes from x.shape or "
                         "x.size(d); a run-time number can be used in tensor arithmetic");
}
int64_t Bound::int_(const std::string& name) const {
  const Val& v = val(name);
  compile_time(name, v);
  if (v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool) return v.i;
  if (v.kind == Val::Kind::SymDim) L.constant(v, span(name));  // reports the symbol
  fail(name, "argument '" + name + "' must be an int, got " + kind_name(v));
}
double Bound::float_(const std::string& name) const {
  const Val& v = val(name);
  compile_time(name, v);
  if (v.is_number()) return v.num();
  fail(name, "argument '" + name + "' must be a number, got " + kind_name(v));
}
bool Bound::bool_(const std::string& name) const {
  const Val& v = val(name);
  compile_time(name, v);
  if (v.kind == Val::Kind::Bool || v.kind == Val::Kind::Int) return v.i != 0;
  fail(name, "argument '" + name + "' must be a bool, got " + kind_name(v));
}
std::string Bound::str(const std::string& name) const {
  const Val& v = val(name);
  compile_time(name, v);
  if (v.kind == Val::Kind::Str) return v.s;
  fail(name, "argument '" + name + "' must be a string, got " + kind_name(v));
}
std::vector<int64_t> Bound::ints(const std::string& name) const {
  const Val* v = &val(name);
  if (v->kind == Val::Kind::Int || v->kind == Val::Kind::Bool) return {v->i};
  // view(*shape) called as view((2, 3)): the single tuple is the list.
  if (v->is_seq() && v->items.size() == 1 && v->items[0].is_seq()) v = &v->items[0];
  compile_time(name, *v);
  if (!v->is_seq())
    fail(name, "argument '" + name + "' must be an int or a list of ints, got " + kind_name(*v));
  std::vector<int64_t> out;
  for (const Val& item : v->items) {
    compile_time(name, item);
    if (item.kind == Val::Kind::SymDim) L.constant(item, span(name));
    if (item.kind != Val::Kind::Int && item.kind != Val::Kind::Bool) {
      fail(name, "argument '" + name + "' must be a list of ints, found " + kind_name(item));
    }
    out.push_back(item.i);
  }
  return out;
}
std::optional<DType> Bound::dtype(const std::string& name) const {
  const Val& v = val(name);
  if (v.kind == Val::Kind::None) return std::nullopt;
  if (v.kind == Val::Kind::DType) return v.dtype;
  fail(name, "argument '" + name + "' must be a dtype such as torch.float32, got " + kind_name(v));
}

// --- binding ------------------------------------------------------------------------------

namespace {

void bind_args(Lowerer& L, Bound& b, const std::vector<SigParam>& sig, const CallArgs& call) {
  size_t next = 0;
  for (size_t k = 0; k < call.positional.size(); ++k) {
    const Arg& a = call.positional[k];
    while (next < sig.size() && sig[next].kw_only && !sig[next].varargs) ++next;
    if (next >= sig.size()) {
      size_t max = 0;
      for (const SigParam& p : sig) max += !p.kw_only;
      L.fail(a.span, b.fn + "() takes " + std::to_string(max) + " positional argument" +
                         (max == 1 ? "" : "s") + " but " + std::to_string(call.positional.size()) +
                         " were given");
    }
    if (sig[next].varargs) {
      Val rest = Val::tuple({});
      for (size_t r = k; r < call.positional.size(); ++r)
        rest.items.push_back(call.positional[r].val);
      b.args[sig[next].name] = {rest, a.span};
      ++next;
      break;
    }
    b.args[sig[next].name] = a;
    ++next;
  }
  for (size_t ki = 0; ki < call.keywords.size(); ++ki) {
    const auto& [name, a] = call.keywords[ki];
    const Span& name_span = ki < call.keyword_names.size() ? call.keyword_names[ki] : a.span;
    const SigParam* p = nullptr;
    for (const SigParam& s : sig) {
      if (s.name == name) p = &s;
    }
    if (!p) {
      std::vector<std::string> names;
      for (const SigParam& s : sig) names.push_back(s.name);
      std::string near = nearest_name(name, names);
      L.fail(name_span, b.fn + "() got an unexpected keyword argument '" + name + "'" +
                            (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    if (b.args.count(name)) {
      L.fail(name_span, b.fn + "() got multiple values for argument '" + name + "'");
    }
    b.args[name] = a;
  }
  for (const SigParam& p : sig) {
    if (b.args.count(p.name)) continue;
    if (p.varargs) {
      b.args[p.name] = {Val::tuple({}), {}};
    } else if (p.has_default) {
      b.args[p.name] = {p.default_value, {}};
    } else {
      L.fail(call.callee, b.fn + "() missing required argument '" + p.name + "'");
    }
  }
}

}  // namespace

// --- calls ----------------------------------------------------------------------------------

Val Lowerer::call(const Expr& e) {
  const Expr& callee_expr = *e.items[0];
  Val callee = eval(callee_expr);
  CallArgs args;
  args.span = e.span;
  // Errors point at the method name for `x.m(...)`, at the whole callee for
  // `torch.f(...)` and `f(...)`.
  args.callee = callee.kind == Val::Kind::Method && e.op_span.line ? e.op_span : callee_expr.span;
  for (size_t k = 1; k < e.items.size(); ++k) {
    const Expr& a = *e.items[k];
    if (a.kind == ExprKind::Starred) {
      Val inner = eval(*a.items[0]);
      if (!inner.is_seq()) fail(a.span, "can only unpack a tuple or list with '*'");
      for (const Val& item : inner.items) args.positional.push_back({item, a.span});
      continue;
    }
    args.positional.push_back({eval(a), a.span, &a});
  }
  for (const Keyword& k : e.keywords) {
    args.keywords.push_back({k.name, {eval(*k.value), k.value->span, k.value.get()}});
    args.keyword_names.push_back(k.span);
  }
  return call_value(callee, args, &callee_expr);
}

Val Lowerer::call_value(const Val& callee, const CallArgs& args, const Expr* callee_expr) {
  for (const Arg& a : args.positional) {
    if (a.val.kind == Val::Kind::Poison) throw Abort{};
  }
  switch (callee.kind) {
    case Val::Kind::Function:
      return call_function(*m_.find(callee.s), args);
    case Val::Kind::Builtin: {
      size_t dot = callee.s.find('.');
      if (dot == std::string::npos) {
        return call_builtin(callee.s, args);
      }
      if (callee.s.starts_with("torch.jit.") || callee.s == "torch.finfo" ||
          callee.s == "torch.iinfo") {
        return call_torch_builtin(callee.s, args);
      }
      // torch.X, F.X, math.X; torch.linalg.X is the torch entry "linalg.X";
      // torch.special.X has entries of its own; aten.X is torch.ops.aten.X.
      std::string ns = callee.s.substr(0, dot), name = callee.s.substr(dot + 1);
      unsigned sp = ns == "torch" ? kTorch : ns == "F" ? kF : kMath;
      if (callee.s.starts_with("torch.special.")) {
        sp = kSpecial;
        name = callee.s.substr(sizeof("torch.special.") - 1);
      }
      if (ns == "aten") sp = find_op(kTorch, name) ? kTorch : kMethod;  // torch.ops.aten.X
      const OpEntry* op = find_op(sp, name);
      KILN_INTERNAL_CHECK(op, "builtin " << callee.s << " not in the op table");
      Bound b(*this, spelled(sp, name), args);
      bind_args(*this, b, sig_of(op), args);
      Val r = op->fn(b);
      // `F.relu(x, inplace=True)` returns the result and also updates x, as in
      // PyTorch (one op table entry serves both forms).
      auto input = b.args.find("input");
      if (b.given("inplace") && b.bool_("inplace") && r.is_tensor() && input != b.args.end() &&
          input->second.val.is_tensor()) {
        return mutate(input->second.expr, input->second.val, r.value, args.callee);
      }
      return r;
    }
    case Val::Kind::Method: {
      const Val& self = callee.items[0];
      if (self.kind == Val::Kind::List) return call_list_method(callee, args);
      std::string name = callee.s;
      const OpEntry* op = find_op(kMethod, name);
      bool inplace = op && op->inplace;
      if (!op && name.back() == '_') {
        op = find_op(kMethod, name.substr(0, name.size() - 1));
        inplace = true;
      }
      KILN_INTERNAL_CHECK(op, "method " << name << " not in the op table");
      CallArgs with_self = args;
      with_self.positional.insert(with_self.positional.begin(), Arg{self, args.callee});
      Bound b(*this, "Tensor." + name, with_self);
      bind_args(*this, b, sig_of(op), with_self);
      Val r = op->fn(b);
      if (!inplace) return r;
      if (!r.is_tensor()) fail(args.callee, "Tensor." + name + " has no in-place form");
      return mutate(callee.receiver, self, r.value, args.callee);
    }
    case Val::Kind::Type:
      fail(args.callee, "'" + callee.s + "' is a type and cannot be called here");
    case Val::Kind::Poison:
      throw Abort{};
    default:
      fail(args.callee, "a " + kind_name(callee) + " is not callable");
  }
}

Val Lowerer::call_function(const FunctionDef& fn, const CallArgs& args) {
  report_deferred(fn);
  // Calls are inlined at compile time, so a recursive call would never end.
  for (const Frame& f : frames_) {
    if (f.fn == &fn) {
      fail(args.callee, "recursive call of '" + fn.name + "': recursion is not supported",
           "calls are inlined when the script is compiled");
    }
  }
  if (frames_.size() > kMaxInlineDepth) {
    fail(args.callee, "calls are nested too deeply (more than " + std::to_string(kMaxInlineDepth) +
                          " inlined calls)");
  }
  Frame fr;
  size_t k = 0;
  for (const Param& p : fn.params) {
    const Arg* given = nullptr;
    if (k < args.positional.size()) given = &args.positional[k++];
    for (const auto& [name, a] : args.keywords) {
      if (name == p.name) {
        if (given) fail(a.span, fn.name + "() got multiple values for argument '" + name + "'");
        given = &a;
      }
    }
    if (given) {
      fr.vars[p.name] = given->val;
    } else if (p.default_value) {
      fr.vars[p.name] = eval(*p.default_value);
    } else {
      fail(args.callee, fn.name + "() missing required argument '" + p.name + "'");
    }
  }
  if (k < args.positional.size()) {
    fail(args.positional[k].span, fn.name + "() takes " + std::to_string(fn.params.size()) +
                                      " arguments but " + std::to_string(args.positional.size()) +
                                      " were given");
  }
  for (size_t ki = 0; ki < args.keywords.size(); ++ki) {
    const std::string& name = args.keywords[ki].first;
    bool known = false;
    for (const Param& p : fn.params) known = known || p.name == name;
    if (!known) {
      fail(ki < args.keyword_names.size() ? args.keyword_names[ki] : args.callee,
           fn.name + "() got an unexpected keyword argument '" + name + "'");
    }
  }
  return run(fn, std::move(fr));
}

Val Lowerer::call_builtin(const std::string& name, const CallArgs& args) {
  auto arg = [&](size_t k) -> const Val& {
    if (k >= args.positional.size()) {
      fail(args.callee, name + "() expects at least " + std::to_string(k + 1) + " argument(s)");
    }
    return args.positional[k].val;
  };
  auto span = [&](size_t k) {
    return k < args.positional.size() ? args.positional[k].span : args.callee;
  };
  if (!args.keywords.empty() && name != "print") {
    fail(args.keywords[0].second.span, name + "() takes no keyword arguments here");
  }
  auto scalar_only = [&](const Val& v, size_t k) {
    if (v.is_runtime_number()) {
      runtime_value_needed(v, span(k), name + "()",
                           name == "range" ? "loop bounds must be static: take them from shapes "
                                             "(x.shape[0], x.size(1)) or constants"
                                           : "use the torch function on the tensor instead");
    }
    if (v.is_tensor()) {
      fail(span(k),
           name + "() of a tensor needs its data at compile time and is not supported yet");
    }
    if (v.kind == Val::Kind::SymDim) constant(v, span(k));
  };
  if ((name == "float" || name == "int" || name == "bool") && args.positional.size() == 1 &&
      arg(0).is_tensor()) {
    Val::Kind k = name == "float" ? Val::Kind::Float
                  : name == "int" ? Val::Kind::Int
                                  : Val::Kind::Bool;
    return to_runtime_number(arg(0), k, name + "()", span(0));
  }
  if (name == "float") {
    if (args.positional.empty()) return Val::float_(0);
    const Val& v = arg(0);
    scalar_only(v, 0);
    if (v.kind == Val::Kind::Str) {
      std::string s = v.s;
      for (char& c : s) c = char(std::tolower(uint8_t(c)));
      if (s == "inf" || s == "+inf" || s == "infinity") return Val::float_(INFINITY);
      if (s == "-inf" || s == "-infinity") return Val::float_(-INFINITY);
      if (s == "nan") return Val::float_(NAN);
      // strtod, not std::stod: like Python, "1e999" is inf and "1e-400" is 0.0
      // (std::stod throws out_of_range for both); C's hex floats are not Python's.
      // Blanks around the number are allowed, as in Python.
      size_t b = s.find_first_not_of(" \t\n\r\f\v"), e = s.find_last_not_of(" \t\n\r\f\v");
      std::string t = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
      if (!t.empty() && t.find('x') == std::string::npos) {
        char* end = nullptr;
        double d = std::strtod(t.c_str(), &end);
        if (end == t.c_str() + t.size()) return Val::float_(d);
      }
      fail(span(0), "could not convert string to float: '" + v.s + "'");
    }
    if (!v.is_number()) fail(span(0), "float() argument must be a number, got " + kind_name(v));
    return Val::float_(v.num());
  }
  if (name == "int") {
    const Val& v = arg(0);
    scalar_only(v, 0);
    if (v.kind == Val::Kind::Float) return Val::int_(float_to_int(*this, v.f, "int", span(0)));
    if (v.kind == Val::Kind::Str) {
      // Python's int(str): optional blanks and sign, decimal digits, '_' between digits.
      std::string digits;
      size_t b = v.s.find_first_not_of(" \t\n"), e = v.s.find_last_not_of(" \t\n");
      bool ok = b != std::string::npos;
      for (size_t k = b; ok && k <= e; ++k) {
        char c = v.s[k];
        if (std::isdigit(uint8_t(c))) {
          digits += c;
        } else if (k == b && (c == '-' || c == '+')) {
          digits += c;
        } else {
          ok = c == '_' && k > b && k < e && std::isdigit(uint8_t(v.s[k - 1])) &&
               std::isdigit(uint8_t(v.s[k + 1]));
        }
      }
      ok = ok && digits.find_first_of("0123456789") != std::string::npos;
      if (!ok) fail(span(0), "invalid literal for int() with base 10: '" + v.s + "'");
      errno = 0;
      long long r = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE)
        fail(span(0), "integer overflow: int('" + v.s + "') does not fit in int64");
      return Val::int_(r);
    }
    if (!v.is_number()) fail(span(0), "int() argument must be a number, got " + kind_name(v));
    return Val::int_(v.i);
  }
  if (name == "bool") {
    scalar_only(arg(0), 0);
    return Val::bool_(truth(arg(0), span(0)));
  }
  if (name == "abs") {
    const Val& v = arg(0);
    if (v.is_tensor()) return fresh(apply1("abs", {v.value}, {}, args.callee));
    scalar_only(v, 0);
    if (std::optional<Val> r = scalar_unary(*this, "abs", v, args.callee)) return *r;
    fail(span(0), "bad operand for abs(): " + kind_name(v));
  }
  if (name == "round") {
    const Val& v = arg(0);
    scalar_only(v, 0);
    if (args.positional.size() > 2) fail(span(2), "round() takes at most 2 arguments");
    if (!v.is_number()) fail(span(0), "round() needs a number");
    const Val* ndigits = args.positional.size() > 1 ? &arg(1) : nullptr;
    if (ndigits) scalar_only(*ndigits, 1);
    return py_round(*this, v, ndigits, args.callee);
  }
  if (name == "len") {
    const Val& v = arg(0);
    if (v.is_seq()) return Val::int_(int64_t(v.items.size()));
    if (v.kind == Val::Kind::Str) return Val::int_(int64_t(v.s.size()));
    if (v.is_tensor()) return size_val(v.value, 0);
    fail(span(0), "object of type '" + kind_name(v) + "' has no len()");
  }
  if (name == "range") {
    std::vector<int64_t> n;
    for (size_t k = 0; k < args.positional.size(); ++k) {
      const Val& v = arg(k);
      scalar_only(v, k);
      if (v.kind != Val::Kind::Int && v.kind != Val::Kind::Bool) {
        fail(span(k), "range() arguments must be integers, got " + kind_name(v));
      }
      n.push_back(v.i);
    }
    if (n.empty() || n.size() > 3) fail(args.callee, "range() takes 1 to 3 arguments");
    int64_t start = n.size() > 1 ? n[0] : 0, stop = n.size() > 1 ? n[1] : n[0];
    int64_t step = n.size() > 2 ? n[2] : 1;
    if (step == 0) fail(span(2), "range() step must not be zero");
    // The length first, exactly (start, stop and step may be near the int64 limits).
    __int128 lo = start, hi = stop, st = step, len = 0;
    if (st > 0 && lo < hi) len = (hi - lo - 1) / st + 1;
    if (st < 0 && lo > hi) len = (lo - hi - 1) / -st + 1;
    check_sequence_length(len, args.callee);
    std::vector<Val> items;
    for (__int128 k = 0; k < len; ++k) items.push_back(Val::int_(int64_t(lo + k * st)));
    return Val::tuple(std::move(items), Val::Kind::List);
  }
  if (name == "min" || name == "max" || name == "sum") {
    std::vector<Val> items;
    if (args.positional.size() == 1 && arg(0).is_seq()) {
      items = arg(0).items;
    } else {
      for (const Arg& a : args.positional) items.push_back(a.val);
    }
    if (items.empty()) fail(args.callee, name + "() of an empty sequence");
    Val best = name == "sum" ? Val::int_(0) : items[0];
    for (size_t k = name == "sum" ? 0 : 1; k < items.size(); ++k) {
      if (items[k].is_tensor()) {
        if (name == "sum") {
          best = binary("+", best, items[k], args.callee);
          continue;
        }
        fail(args.callee, "Python's " + name + "() on tensors is not supported; use torch." +
                              (name == "min" ? "minimum" : "maximum"));
      }
      if (name == "sum") {
        best = binary("+", best, items[k], args.callee);
      } else {
        if (best.is_tensor()) {
          fail(args.callee, "Python's " + name + "() on tensors or run-time numbers is not "
                            "supported; use torch." + (name == "min" ? "minimum" : "maximum"));
        }
        Val less = compare("<", items[k], best, args.callee);
        if ((name == "min") == bool(less.i)) best = items[k];
      }
    }
    return best;
  }
  if (name == "enumerate" || name == "zip") {
    std::vector<Val> seqs;
    for (size_t k = 0; k < args.positional.size(); ++k) {
      if (!arg(k).is_seq())
        fail(span(k), name + "() needs tuples or lists, got " + kind_name(arg(k)));
      seqs.push_back(arg(k));
    }
    if (seqs.empty()) fail(args.callee, name + "() needs an argument");
    std::vector<Val> out;
    size_t n = seqs[0].items.size();
    for (const Val& s : seqs) n = std::min(n, s.items.size());
    for (size_t k = 0; k < n; ++k) {
      std::vector<Val> row;
      if (name == "enumerate") row.push_back(Val::int_(int64_t(k)));
      for (const Val& s : seqs) row.push_back(s.items[k]);
      out.push_back(Val::tuple(std::move(row)));
    }
    return Val::tuple(std::move(out), Val::Kind::List);
  }
  if (name == "list" || name == "tuple") {
    if (args.positional.empty())
      return Val::tuple({}, name == "list" ? Val::Kind::List : Val::Kind::Tuple);
    if (!arg(0).is_seq())
      fail(span(0), name + "() needs a tuple or list, got " + kind_name(arg(0)));
    Val v = arg(0);
    v.kind = name == "list" ? Val::Kind::List : Val::Kind::Tuple;
    v.storage = 0;  // list(xs) is a copy
    return with_identity(v);
  }
  if (name == "print") return Val::none();  // graphs have no side effects; printing is dropped
  if (name == "isinstance") {
    fail(args.callee, "isinstance() is not supported yet");
  }
  fail(args.callee, "builtin '" + name + "' is not supported yet");
}

}  // namespace kiln::frontend
