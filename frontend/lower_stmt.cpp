// Lowering of statements: assignment (incl. tuple unpacking and slice
// assignment), compile-time if/for, return, inlined calls' frames, and the
// functionalization of in-place updates (rebinding plus alias tracking).
// Also the Lowerer's emission helpers. Assumes: a parsed Module without
// syntax errors.
#include <algorithm>
#include <limits>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {
// The names an assignment target binds: `a`, `a, (b, *c)`.
void target_names(const Expr& target, std::vector<std::string>& out) {
  if (target.kind == ExprKind::Name) {
    out.push_back(target.name);
  } else if (target.kind == ExprKind::Tuple || target.kind == ExprKind::List) {
    for (const ExprPtr& t : target.items) target_names(*t, out);
  } else if (target.kind == ExprKind::Starred) {
    target_names(*target.items[0], out);
  }
}
// Every name an expression reads.
void used_names(const Expr& e, std::vector<std::string>& out) {
  if (e.kind == ExprKind::Name) out.push_back(e.name);
  for (const ExprPtr& c : e.items) {
    if (c) used_names(*c, out);
  }
  for (const Keyword& k : e.keywords) {
    if (k.value) used_names(*k.value, out);
  }
}
}  // namespace

std::string kind_name(const Val& v) {
  switch (v.kind) {
    case Val::Kind::None:
      return "None";
    case Val::Kind::Tensor:
      if (v.is_runtime_number()) {
        return kind_name(Val::tuple({}, v.number)) + " (known only at run time)";
      }
      return "Tensor";
    case Val::Kind::Int:
      return "int";
    case Val::Kind::Float:
      return "float";
    case Val::Kind::Bool:
      return "bool";
    case Val::Kind::Str:
      return "str";
    case Val::Kind::DType:
      return "dtype";
    case Val::Kind::SymDim:
      return "symbolic size";
    case Val::Kind::Tuple:
      return "tuple";
    case Val::Kind::List:
      return "list";
    case Val::Kind::Module:
      return "module";
    case Val::Kind::Function:
      return "function";
    case Val::Kind::Method:
      return "method";
    case Val::Kind::Builtin:
      return "builtin function";
    case Val::Kind::Type:
      return "type";
    case Val::Kind::Poison:
      return "error";
  }
  return "?";
}

Lowerer::Lowerer(const Module& m, ir::Graph& g, Diagnostics& diags)
    : m_(m), g_(g), diags_(diags), file_(m.file) {
  // Module-level constants (`EPS = 1e-5`) are evaluated once, in file order.
  frames_.emplace_back();
  // One that fails (`rng = np.random.default_rng(0)`) is an error only if the
  // chosen def uses a name it assigns.
  for (const StmtPtr& s : m.globals) {
    if (s->kind == StmtKind::Assign || s->kind == StmtKind::AnnAssign) {
      size_t errors = diags_.count();
      try {
        exec(*s);
      } catch (const Abort&) {
        auto failed = std::make_shared<FailedGlobal>();
        failed->errors = diags_.take_from(errors);
        if (failed->errors.empty()) {
          // It failed on an earlier failed global (`W = rng.normal(...)`): its
          // errors are that one's.
          std::vector<std::string> used;
          used_names(*s->value, used);
          for (const std::string& n : used) {
            auto it = failed_globals_.find(n);
            if (it == failed_globals_.end()) continue;
            for (const Diagnostic& d : it->second->errors) failed->errors.push_back(d);
          }
        }
        std::vector<std::string> names;
        for (const ExprPtr& t : s->targets) target_names(*t, names);
        for (const std::string& n : names) failed_globals_[n] = failed;
      }
    }
  }
  globals_ = std::move(frames_.back().vars);
  frames_.clear();
}

void Lowerer::enter(const Span& at) {
  if (depth_ >= kMaxDepth) {
    fail(at, "nested too deeply: more than " + std::to_string(kMaxDepth) +
                 " levels of expressions, statements and inlined calls");
  }
  ++depth_;
}

void Lowerer::check_sequence_length(__int128 n, const Span& at) {
  int64_t limit = budgets_.sequence_length;
  if (n <= limit) return;
  std::string count = n > std::numeric_limits<int64_t>::max()
                          ? std::string("more than 2^63")
                          : std::to_string(static_cast<int64_t>(n));
  fail(at, "a sequence of " + count + " items is too long: more than " + std::to_string(limit) +
               budget_note("KILN_MAX_SEQUENCE_LENGTH", limit));
}

void Lowerer::check_loop_length(int64_t n, const Span& at) {
  if (n > budgets_.loop_iterations) {
    fail(at, "loop with more than " + std::to_string(budgets_.loop_iterations) +
                 " iterations is too long to unroll" +
                 budget_note("KILN_MAX_LOOP_ITERATIONS", budgets_.loop_iterations));
  }
}

void Lowerer::count_iteration(const Span& at) {
  // Reported once: the enclosing loops would each report it again.
  if (unrolled_ > budgets_.unrolled_iterations) throw Abort{};
  if (++unrolled_ > budgets_.unrolled_iterations) {
    fail(at, "loops unroll to more than " + std::to_string(budgets_.unrolled_iterations) +
                 " iterations in all; the script is too big to compile" +
                 budget_note("KILN_MAX_UNROLLED_ITERATIONS", budgets_.unrolled_iterations));
  }
}

void Lowerer::fail(const Span& at, const std::string& message, const std::string& note) {
  diags_.error(at, message, note);
  throw Abort{};
}

std::vector<ir::Value*> Lowerer::apply(const std::string& op, std::vector<ir::Value*> inputs,
                                       ir::Attrs attrs, const Span& at) {
  ir::SourceLoc loc = file_->loc(at);
  if (int64_t(g_.nodes().size()) >= budgets_.graph_nodes) {
    fail(at, "the graph has more than " + std::to_string(budgets_.graph_nodes) +
                 " nodes; the script is too big to compile" +
                 budget_note("KILN_MAX_GRAPH_NODES", budgets_.graph_nodes));
  }
  try {
    return g_.apply(op, std::move(inputs), std::move(attrs), loc);
  } catch (const Error& e) {
    // The graph prefixes its message with the location; ours already shows it.
    std::string msg = e.what();
    std::string prefix = loc.str() + ": ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    fail(at, msg);
  }
}

ir::Value* Lowerer::apply1(const std::string& op, std::vector<ir::Value*> inputs, ir::Attrs attrs,
                           const Span& at) {
  std::vector<ir::Value*> outs = apply(op, std::move(inputs), std::move(attrs), at);
  KILN_INTERNAL_CHECK(!outs.empty(), "op " << op << " produced no outputs");
  return outs[0];
}

ir::Value* Lowerer::constant(const Val& v, const Span& at) {
  ir::AttrValue a;
  switch (v.kind) {
    case Val::Kind::Int:
      a = v.i;
      break;
    case Val::Kind::Float:
      a = v.f;
      break;
    case Val::Kind::Bool:
      a = bool(v.i);
      break;
    case Val::Kind::None:
      a = ir::NoneAttr{};
      break;
    case Val::Kind::SymDim:
      fail(at, "the size '" + v.s +
                   "' is only known at run time; using it as a number is not "
                   "supported yet");
    default:
      fail(at, "expected a tensor or a number, got " + kind_name(v));
  }
  try {
    return g_.constant(a, file_->loc(at));
  } catch (const Error& e) {
    fail(at, e.what());
  }
}

ir::Value* Lowerer::operand(const Val& v, const Span& at) {
  if (v.kind == Val::Kind::Poison) throw Abort{};
  if (v.is_tensor()) return v.value;
  if (v.kind == Val::Kind::None) fail(at, "expected a tensor or a number, got None");
  return constant(v, at);
}

Val Lowerer::fresh(ir::Value* v) {
  Val x;
  x.kind = Val::Kind::Tensor;
  x.value = v;
  x.storage = next_storage_++;
  return x;
}

Val Lowerer::view_of(ir::Value* v, const Val& base) {
  Val x = fresh(v);
  if (base.is_tensor()) x.storage = base.storage;
  return x;
}

int64_t Lowerer::static_dim(ir::Value* t, int64_t d, const Span& at) {
  const ir::Dims& dims = t->type().dims();
  int64_t r = int64_t(dims.size());
  if (d < -r || d >= r || r == 0) {
    fail(at, "dimension " + std::to_string(d) + " is out of range for a tensor of rank " +
                 std::to_string(r));
  }
  const ir::Dim& dim = dims[size_t(d < 0 ? d + r : d)];
  if (!dim.is_static()) {
    fail(at, "size " + std::to_string(d) + " of this tensor is the symbolic size '" + dim.symbol +
                 "', which is only known at run time; this use needs a static size");
  }
  return dim.value;
}

Val Lowerer::size_val(ir::Value* t, int64_t d) {
  const ir::Dims& dims = t->type().dims();
  int64_t r = int64_t(dims.size());
  const ir::Dim& dim = dims[size_t(d < 0 ? d + r : d)];
  if (dim.is_static()) return Val::int_(dim.value);
  return Val::named(Val::Kind::SymDim, dim.symbol);
}

ir::Value* Lowerer::cast(ir::Value* t, DType to, const Span& at) {
  if (t->type().dtype() == to && t->type().is_tensor()) return t;
  return apply1("cast", {t}, {{"dtype", to}}, at);
}

Val Lowerer::lookup(const std::string& name, const Span& at) {
  if (!frames_.empty()) {
    auto it = frame().vars.find(name);
    if (it != frame().vars.end()) {
      if (it->second.kind == Val::Kind::Poison) throw Abort{};
      return it->second;
    }
  }
  auto g = globals_.find(name);
  if (g != globals_.end() && g->second.kind != Val::Kind::Poison) return g->second;
  auto failed = failed_globals_.find(name);
  if (failed != failed_globals_.end()) {
    if (!failed->second->reported) {
      failed->second->reported = true;
      for (const Diagnostic& d : failed->second->errors) diags_.add(d);
    }
    throw Abort{};
  }
  if (g != globals_.end()) throw Abort{};  // poisoned without a recorded error: already reported
  if (m_.find(name)) return Val::named(Val::Kind::Function, name);
  if (name == "torch") return Val::named(Val::Kind::Module, "torch");
  if (name == "F") return Val::named(Val::Kind::Module, "F");
  if (name == "nn") return Val::named(Val::Kind::Module, "torch.nn");  // import torch.nn as nn
  if (name == "math") return Val::named(Val::Kind::Module, "math");
  if (name == "typing") return Val::named(Val::Kind::Module, "typing");
  static const char* const types[] = {"Tensor", "List", "Optional", "Tuple",
                                      "Dict",   "Any",  "Union",    "str"};
  for (const char* t : types) {
    if (name == t) return Val::named(Val::Kind::Type, name);
  }
  static const char* const builtins[] = {
      "float", "int",       "bool", "len",  "range", "min",   "max",        "abs",
      "print", "enumerate", "zip",  "list", "tuple", "round", "isinstance", "sum"};
  for (const char* b : builtins) {
    if (name == b) return Val::named(Val::Kind::Builtin, name);
  }
  auto imported = m_.imports.find(name);
  if (imported != m_.imports.end()) {
    const std::string& mod = imported->second;
    if (mod == "torch.nn.functional") return Val::named(Val::Kind::Module, "F");
    if (mod == "torch" || mod == "torch.nn" || mod == "math" || mod == "typing")
      return Val::named(Val::Kind::Module, mod);
    // `from torch import relu`, `from torch.nn.functional import gelu`, `from math import sqrt`
    size_t dot = mod.rfind('.');
    if (dot != std::string::npos) {
      std::string parent = mod.substr(0, dot), fn = mod.substr(dot + 1);
      if (parent == "torch.nn.functional") parent = "F";
      unsigned sp = parent == "torch" ? kTorch : parent == "F" ? kF : parent == "math" ? kMath : 0u;
      if (sp && find_op(sp, fn)) return Val::named(Val::Kind::Builtin, parent + "." + fn);
    }
    fail(at, "'" + name + "' is '" + mod + "', which Kiln does not support",
         "a script may use torch, torch.nn.functional (F), math and typing");
  }
  std::vector<std::string> known;
  if (!frames_.empty()) {
    for (const auto& [n, v] : frame().vars) known.push_back(n);
  }
  for (const auto& [n, v] : globals_) known.push_back(n);
  for (const FunctionDef& f : m_.functions) known.push_back(f.name);
  for (const char* b : builtins) known.push_back(b);
  std::string near = nearest_name(name, known);
  fail(at, "unknown name '" + name + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

// --- statements ------------------------------------------------------------------------

Val Lowerer::run(const FunctionDef& fn, Frame top) {
  top.fn = &fn;
  for (auto& [name, v] : top.vars) {
    if (v.is_seq()) note_items(v);
    v = with_identity(v);
  }
  frames_.push_back(std::move(top));
  // The frame must go on every exit: an Abort from an inlined call unwinds to
  // the caller's statement, which decides by frames_.size() whether it is at
  // the top level (and so may go on to the next statement).
  struct PopFrame {
    std::vector<Frame>& frames;
    ~PopFrame() { frames.pop_back(); }
  } pop{frames_};
  exec_block(fn.body);
  return frame().ret.value_or(Val::none());
}

void Lowerer::exec_block(const std::vector<StmtPtr>& body) {
  for (const StmtPtr& s : body) {
    Frame& f = frame();
    if (f.returned || f.broke || f.continued) return;
    try {
      exec(*s);
    } catch (const Abort&) {
      // Inside an inlined call the caller's statement fails as a whole; at
      // the top level we go on with the next statement to find more errors.
      if (frames_.size() > 1) throw;
      // A failed assert or a reached raise ends the function, as in Python:
      // what follows would only report errors that cannot happen.
      if (s->kind == StmtKind::Assert ||
          (s->kind == StmtKind::Unsupported && s->name == "'raise' statements")) {
        f.returned = true;
        return;
      }
      // Names the statement would have changed are poisoned, so that their
      // later uses stay silent instead of reporting knock-on errors (an empty
      // list after a failed `parts.append(...)`).
      poison_changed(*s);
    }
  }
}

void Lowerer::report_deferred(const FunctionDef& fn) {
  if (fn.deferred.empty()) return;
  for (const Diagnostic& d : fn.deferred) diags_.add(d);
  throw Abort{};
}

void Lowerer::poison_changed(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Expr: {
      // `parts.append(x)`, `x.add_(1).mul_(2)`: the receiver at the root.
      const Expr* e = s.value.get();
      while (e &&
             (e->kind == ExprKind::Call || e->kind == ExprKind::Attribute ||
              e->kind == ExprKind::Subscript) &&
             !e->items.empty()) {
        e = e->items[0].get();
      }
      if (e && e->kind == ExprKind::Name && frame().vars.count(e->name)) poison_targets(*e);
      return;
    }
    case StmtKind::Assign:
    case StmtKind::AnnAssign:
    case StmtKind::AugAssign:
      for (const ExprPtr& t : s.targets) poison_targets(*t);
      return;
    default:
      return;
  }
}

void Lowerer::poison_targets(const Expr& target) {
  if (target.kind == ExprKind::Subscript) {
    // `x[i] = v` that failed: x is not what the code after it expects.
    const Expr* e = &target;
    while (e->kind == ExprKind::Subscript && !e->items.empty()) e = e->items[0].get();
    if (e->kind == ExprKind::Name && frame().vars.count(e->name)) poison_targets(*e);
    return;
  }
  if (target.kind == ExprKind::Name) {
    Val p;
    p.kind = Val::Kind::Poison;
    frame().vars[target.name] = p;
  } else if (target.kind == ExprKind::Tuple || target.kind == ExprKind::List) {
    for (const ExprPtr& t : target.items) poison_targets(*t);
  } else if (target.kind == ExprKind::Starred) {
    poison_targets(*target.items[0]);
  }
}

namespace {
const char* stmt_what(StmtKind k) {
  switch (k) {
    case StmtKind::While:
      return "'while' loops";
    case StmtKind::Def:
      return "nested function definitions";
    default:
      return "this statement";
  }
}
}  // namespace

void Lowerer::exec(const Stmt& s) {
  Nesting nest(*this, s.span);
  switch (s.kind) {
    case StmtKind::Expr: {
      const Expr& e = *s.value;
      // Docstrings and other bare constants do nothing.
      if (e.kind == ExprKind::Str || e.kind == ExprKind::Int || e.kind == ExprKind::Float ||
          e.kind == ExprKind::Ellipsis || e.kind == ExprKind::None) {
        return;
      }
      eval(e);
      return;
    }
    case StmtKind::Assign:
    case StmtKind::AnnAssign: {
      if (!s.value) {  // `x: int` declares nothing we need
        return;
      }
      Val v;
      try {
        v = eval(*s.value);
      } catch (const Abort&) {
        for (const ExprPtr& t : s.targets) poison_targets(*t);
        throw;
      }
      for (const ExprPtr& t : s.targets) store(*t, v, t->span);
      return;
    }
    case StmtKind::AugAssign: {
      const Expr& target = *s.targets[0];
      if (target.kind != ExprKind::Name && target.kind != ExprKind::Subscript) {
        fail(target.span, "augmented assignment to this target is not supported yet");
      }
      try {
        Val old = eval(target);
        Val rhs = eval(*s.value);
        Span at = s.span;
        Val result = binary(s.op, old, rhs, at);
        if (old.kind == Val::Kind::List && s.op == "+") {
          // `xs += ys` extends xs in place: aliases of the list see it too.
          change_list(old, [&](std::vector<Val>& items) { items = result.items; });
          if (target.kind == ExprKind::Name) return;
        }
        if (old.is_tensor() && result.is_tensor()) {
          // `x += y` updates x in place (PyTorch keeps x's dtype and shape).
          if (target.kind == ExprKind::Name) {
            mutate(&target, old, result.value, at);
          } else {
            store(target, result, at);
          }
        } else {
          store(target, result, at);
        }
      } catch (const Abort&) {
        if (target.kind == ExprKind::Name) poison_targets(target);
        throw;
      }
      return;
    }
    case StmtKind::Return: {
      Val v = s.value ? eval(*s.value) : Val::none();
      frame().ret = v;
      frame().returned = true;
      return;
    }
    case StmtKind::If: {
      Val c = eval(*s.test);
      if (truth(c, s.test->span)) {
        exec_block(s.body);
      } else {
        exec_block(s.orelse);
      }
      return;
    }
    case StmtKind::For: {
      Val seq = eval(*s.value);
      std::vector<Val> items;
      if (seq.is_seq()) {
        items = seq.items;
      } else if (seq.is_tensor()) {
        int64_t n = static_dim(seq.value, 0, s.value->span);
        check_loop_length(n, s.value->span);  // before building n views
        for (int64_t i = 0; i < n; ++i) {
          items.push_back(view_of(
              apply1("select", {seq.value}, {{"dim", int64_t(0)}, {"index", i}}, s.value->span),
              seq));
        }
      } else {
        fail(s.value->span, "cannot iterate over a " + kind_name(seq) +
                                "; a for loop needs range(n), a tuple or a list");
      }
      if (!seq.is_tensor()) check_loop_length(int64_t(items.size()), s.value->span);
      for (const Val& item : items) {
        count_iteration(s.value->span);
        store(*s.targets[0], item, s.targets[0]->span);
        size_t errors = diags_.count();
        exec_block(s.body);
        // An error in the body would repeat in every later iteration, and
        // the names it poisoned would make them meaningless: stop unrolling.
        if (diags_.count() > errors) throw Abort{};
        Frame& f = frame();
        f.continued = false;
        if (f.broke) {
          f.broke = false;
          break;
        }
        if (f.returned) break;
      }
      return;
    }
    case StmtKind::Pass:
    case StmtKind::Import:
      return;
    case StmtKind::Break:
      frame().broke = true;
      return;
    case StmtKind::Continue:
      frame().continued = true;
      return;
    case StmtKind::Assert: {
      Val c = eval(*s.test);
      if (c.is_tensor()) {
        // Asserts are checked when compiling; the graph has no run-time checks.
        fail(s.test->span,
             "assert on a tensor value is not supported: its condition depends on tensor data, "
             "which is known only at run time (Kiln checks asserts when compiling)",
             "assert on shapes, dtypes and arguments (x.dim() == 2, x.shape[-1] == n); check "
             "data outside the script, or handle the values with torch.where / torch.clamp");
      }
      if (!truth(c, s.test->span)) {
        std::string msg = "assertion failed";
        if (s.value) {
          Val m = eval(*s.value);
          if (m.kind == Val::Kind::Str) msg += ": " + m.s;
        }
        fail(s.test->span, msg);
      }
      return;
    }
    case StmtKind::While:
    case StmtKind::Def:
      fail(s.span, std::string(stmt_what(s.kind)) + " are not supported yet");
    case StmtKind::Unsupported:
      if (s.name == "'raise' statements") {
        // Control flow runs when compiling: a raise in a branch not taken is fine.
        fail(s.span, "this 'raise' is reached for these inputs",
             "Kiln runs Python control flow when compiling, so a raise is allowed only in a "
             "branch that the arguments and shapes do not take");
      }
      fail(s.span, s.name + " are not supported yet");
  }
}

void Lowerer::store(const Expr& target, const Val& v, const Span& at) {
  switch (target.kind) {
    case ExprKind::Name: {
      Val x = v;
      if (x.is_tensor() && x.value->name().empty() && x.value->producer()) {
        x.value->set_name(target.name);
      }
      if (x.is_seq()) note_items(x);
      frame().vars[target.name] = with_identity(x);
      return;
    }
    case ExprKind::Tuple:
    case ExprKind::List: {
      if (!v.is_seq()) {
        fail(at, "cannot unpack a " + kind_name(v) + " into " +
                     std::to_string(target.items.size()) + " names" +
                     (v.is_tensor() ? " (unpacking a tensor is not supported yet)" : ""));
      }
      if (v.items.size() != target.items.size()) {
        fail(at, "cannot unpack " + std::to_string(v.items.size()) + " values into " +
                     std::to_string(target.items.size()) + " names");
      }
      for (size_t i = 0; i < v.items.size(); ++i) store(*target.items[i], v.items[i], at);
      return;
    }
    case ExprKind::Subscript: {
      Val base = eval(*target.items[0]);
      if (base.kind == Val::Kind::List) {
        set_list_item(base, *target.items[1], v);
        return;
      }
      if (!base.is_tensor()) {
        fail(target.span, "item assignment on a " + kind_name(base) + " is not supported yet");
      }
      ir::Value* updated = scatter(base, *target.items[1], v, at);
      mutate(target.items[0].get(), base, updated, at);
      return;
    }
    case ExprKind::Attribute:
      fail(target.span, "attribute assignment is not supported yet");
    default:
      fail(target.span, "cannot assign to this expression");
  }
}

Val Lowerer::mutate(const Expr* receiver, const Val& self, ir::Value* new_value, const Span& at) {
  KILN_INTERNAL_CHECK(self.is_tensor(), "mutate of a non-tensor");
  const ir::Type& old_t = self.value->type();
  const ir::Type& new_t = new_value->type();
  if (!new_t.is_tensor() || new_t.dims() != old_t.dims()) {
    fail(at, "in-place update would change the shape of the tensor from " +
                 ir::dims_str(old_t.dims()) + " to " +
                 (new_t.is_tensor() ? ir::dims_str(new_t.dims()) : new_t.str()));
  }
  DType from = new_t.dtype(), to = old_t.dtype();
  if (from != to) {
    // PyTorch's can_cast: an in-place result may not go float -> int or to bool.
    bool ok =
        !(is_floating(from) && !is_floating(to)) && !(to == DType::Bool && from != DType::Bool);
    if (!ok) {
      fail(at, std::string("in-place update: result type ") + dtype_name(from) +
                   " can't be cast to the tensor's type " + dtype_name(to));
    }
    new_value = cast(new_value, to, at);
  }
  Val now = self;
  now.value = new_value;
  if (receiver && receiver->kind == ExprKind::Name) {
    rebind(receiver->name, self, now, at);
    return now;
  }
  if (receiver && receiver->kind == ExprKind::Subscript) {
    // `xs[0].add_(1)` on a list: every other holder of that tensor sees it.
    const Expr& base = *receiver->items[0];
    if (base.kind == ExprKind::Name) {
      auto it = frame().vars.find(base.name);
      if (it != frame().vars.end() && it->second.kind == Val::Kind::List) {
        rebind_items(self, now, at, true);
      }
    }
    store(*receiver, now, at);
    return now;
  }
  // A temporary (`(a + b).mul_(2)`) may be updated freely; a view of a live
  // variable (`x.t().add_(1)`) would change that variable, which we cannot
  // express without indexing.
  for (const Frame& f : frames_) {
    for (const auto& [n, v] : f.vars) {
      if (v.is_tensor() && v.storage == self.storage) {
        fail(at, "in-place update of a view of '" + n + "' is not supported yet",
             "assign through indexing instead, e.g. x[...] = value");
      }
    }
  }
  return now;
}

void Lowerer::rebind(const std::string& name, const Val& old, const Val& now, const Span& at) {
  // Every other variable sharing this storage sees the update: plain aliases
  // (same SSA value) are rebound too; views of a different shape cannot be
  // updated without scatter/gather bookkeeping, so they are rejected.
  rebind_items(old, now, at, false);  // lists and tuples holding the tensor
  for (size_t fi = 0; fi < frames_.size(); ++fi) {
    for (auto& [n, v] : frames_[fi].vars) {
      if (!v.is_tensor() || v.storage != old.storage) continue;
      if (fi + 1 == frames_.size() && n == name) continue;
      if (v.value == old.value) {
        v.value = now.value;
      } else {
        fail(at,
             "in-place update of '" + name + "' would also change '" + n +
                 "', which is a view of the same memory; this is not supported yet",
             "use .clone() to make an independent copy first");
      }
    }
  }
  frame().vars[name] = now;
}

}  // namespace kiln::frontend
