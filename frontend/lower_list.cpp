// Python list methods on compile-time lists: append, extend, insert, pop.
//
// Lists are compile-time values (a Val holding items), but Python lists are
// mutable and shared: after `b = a`, `a.append(x)` is visible through `b`,
// and a list passed to a def and appended to there is longer in the caller.
// So every list that can be reached from a variable carries an identity (a
// fresh `storage` number, given when the list is displayed, converted with
// list() or bound to a name), and a mutating method rewrites every Val with
// that identity in every frame. A list without an identity is a temporary
// nobody else can see, so changing it changes nothing observable.
//
// Cost: `xs.append(x)` in a loop must stay linear, so the items are edited in
// place, `xs.append` on a variable does not copy the list, and values are
// searched (lists inside tuples and lists) only for a list that was ever put
// inside one (nested_); otherwise only the variables are looked at. A
// bound method keeps a stale copy of its list and reads the current items by
// identity when called.
#include <functional>

#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

bool is_list_method(const std::string& name) {
  return name == "append" || name == "extend" || name == "insert" || name == "pop";
}

// Calls `edit` on the items of every list with identity `id` inside `v`.
void edit_lists(Val& v, int64_t id, const std::function<void(std::vector<Val>&)>& edit) {
  if (v.kind == Val::Kind::List && v.storage == id) {
    edit(v.items);
    return;
  }
  if (v.is_seq()) {
    for (Val& item : v.items) {
      if (item.is_seq()) edit_lists(item, id, edit);
    }
  }
}

// The list with identity `id` inside `v`, if any.
const Val* find_list(const Val& v, int64_t id) {
  if (v.kind == Val::Kind::List && v.storage == id) return &v;
  if (v.is_seq()) {
    for (const Val& item : v.items) {
      if (!item.is_seq()) continue;
      if (const Val* found = find_list(item, id)) return found;
    }
  }
  return nullptr;
}

}  // namespace

Val Lowerer::with_identity(Val v) {
  if (v.kind == Val::Kind::List && v.storage == 0) v.storage = next_storage_++;
  return v;
}

void Lowerer::note_nested(const Val& item) {
  if ((item.kind == Val::Kind::List || item.is_tensor()) && item.storage != 0) {
    nested_.insert(item.storage);
  }
}

void Lowerer::note_items(const Val& seq) {
  for (const Val& item : seq.items) {
    note_nested(item);
    if (item.is_seq()) note_items(item);
  }
}

void Lowerer::rebind_items(const Val& old, const Val& now, const Span& at, bool vars) {
  auto update = [&](Val& v, const std::string& holder) {
    if (v.value == old.value) {
      v.value = now.value;
      return;
    }
    fail(at,
         "in-place update would also change '" + holder +
             "', which holds a view of the same memory; this is not supported yet",
         "use .clone() to make an independent copy first");
  };
  std::function<void(Val&, const std::string&)> walk = [&](Val& v, const std::string& holder) {
    for (Val& item : v.items) {
      if (item.is_seq()) {
        walk(item, holder);
      } else if (item.is_tensor() && item.storage == old.storage) {
        update(item, holder);
      }
    }
  };
  bool nested = nested_.count(old.storage) > 0;
  auto visit = [&](Val& v, const std::string& n) {
    if (nested && v.is_seq()) walk(v, n);
    if (vars && v.is_tensor() && v.storage == old.storage) update(v, n);
  };
  for (Frame& f : frames_) {
    for (auto& [n, v] : f.vars) visit(v, n);
  }
  for (auto& [n, v] : globals_) visit(v, n);
}

std::optional<Val> Lowerer::list_method_of(const Expr& e) {
  if (e.kind != ExprKind::Attribute || e.items[0]->kind != ExprKind::Name ||
      !is_list_method(e.name) || frames_.empty()) {
    return std::nullopt;
  }
  auto it = frame().vars.find(e.items[0]->name);
  if (it == frame().vars.end() || it->second.kind != Val::Kind::List || !it->second.storage) {
    return std::nullopt;
  }
  // `self` carries only the identity: current_items() finds the items.
  Val self;
  self.kind = Val::Kind::List;
  self.storage = it->second.storage;
  Val m = Val::named(Val::Kind::Method, e.name);
  m.items.push_back(self);
  return m;
}

const std::vector<Val>& Lowerer::current_items(const Val& list) const {
  // `list` may be a copy taken before its arguments were evaluated
  // (`xs.append(xs.pop())`), or carry only the identity: the variables hold
  // the list as it is now.
  if (list.storage != 0) {
    bool nested = nested_.count(list.storage) > 0;
    auto find = [&](const Val& v) -> const Val* {
      if (v.kind == Val::Kind::List && v.storage == list.storage) return &v;
      return nested ? find_list(v, list.storage) : nullptr;
    };
    for (const Frame& f : frames_) {
      for (const auto& [n, v] : f.vars) {
        if (const Val* now = find(v)) return now->items;
      }
    }
    for (const auto& [n, v] : globals_) {
      if (const Val* now = find(v)) return now->items;
    }
  }
  return list.items;
}

void Lowerer::change_list(const Val& list, const std::function<void(std::vector<Val>&)>& edit) {
  if (list.storage == 0) return;  // a temporary: nobody sees the change
  // Edited in place, and values are searched only for a list that was ever
  // put inside one, so that appending in a loop stays linear.
  bool nested = nested_.count(list.storage) > 0;
  auto visit = [&](Val& v) {
    if (v.kind == Val::Kind::List && v.storage == list.storage) {
      edit(v.items);
    } else if (nested) {
      edit_lists(v, list.storage, edit);
    }
  };
  for (Frame& f : frames_) {
    for (auto& [name, v] : f.vars) visit(v);
  }
  for (auto& [name, v] : globals_) visit(v);
}

void Lowerer::set_list_item(const Val& list, const Expr& index, const Val& v) {
  if (index.kind == ExprKind::Slice)
    fail(index.span, "slice assignment on a list is not supported yet");
  Val k = eval(index);
  if (k.kind != Val::Kind::Int && k.kind != Val::Kind::Bool) {
    if (k.kind == Val::Kind::SymDim) constant(k, index.span);
    if (k.is_runtime_number()) {
      runtime_value_needed(k, index.span, "a list index",
                           "index with a constant or a size, or stack the list "
                           "(torch.stack) and select with torch.where or a mask");
    }
    fail(index.span, "list indices must be integers, got " + kind_name(k));
  }
  int64_t n = int64_t(current_items(list).size());
  int64_t i = k.i < 0 ? k.i + n : k.i;
  if (i < 0 || i >= n) {
    fail(index.span, "list assignment index " + std::to_string(k.i) +
                         " is out of range for a list of length " + std::to_string(n));
  }
  note_nested(v);
  change_list(list, [&](std::vector<Val>& items) { items[size_t(i)] = v; });
}

Val Lowerer::call_list_method(const Val& method, const CallArgs& args) {
  const Val& self = method.items[0];
  const std::string& name = method.s;
  const std::string fn = "list." + name;
  if (!args.keywords.empty()) {
    fail(args.keywords[0].second.span, fn + "() takes no keyword arguments");
  }
  auto want = [&](size_t lo, size_t hi) {
    size_t n = args.positional.size();
    if (n < lo || n > hi) {
      std::string count =
          lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
      fail(n > hi ? args.positional[hi].span : args.callee, fn + "() takes " + count + " argument" +
                                                                (hi == 1 ? "" : "s") + " (" +
                                                                std::to_string(n) + " given)");
    }
  };
  auto index_arg = [&](size_t k) {
    const Val& v = args.positional[k].val;
    if (v.kind != Val::Kind::Int && v.kind != Val::Kind::Bool) {
      if (v.kind == Val::Kind::SymDim) constant(v, args.positional[k].span);
      fail(args.positional[k].span, fn + "() index must be an integer, got " + kind_name(v));
    }
    return v.i;
  };
  const std::vector<Val>& items = current_items(self);
  const int64_t n = int64_t(items.size());
  std::function<void(std::vector<Val>&)> edit;
  Val result = Val::none();
  if (name == "append") {
    want(1, 1);
    check_sequence_length(__int128(n) + 1, args.callee);
    const Val& x = args.positional[0].val;
    note_nested(x);
    edit = [&](std::vector<Val>& v) { v.push_back(x); };
  } else if (name == "extend") {
    want(1, 1);
    const Val& more = args.positional[0].val;
    if (!more.is_seq()) {
      fail(args.positional[0].span, fn + "() needs a list or tuple here, got " + kind_name(more));
    }
    check_sequence_length(__int128(n) + __int128(more.items.size()), args.callee);
    for (const Val& x : more.items) note_nested(x);
    edit = [&](std::vector<Val>& v) { v.insert(v.end(), more.items.begin(), more.items.end()); };
  } else if (name == "insert") {
    want(2, 2);
    // Python clamps the position into [0, len].
    int64_t i = index_arg(0);
    if (i < 0) i = std::max<int64_t>(i + n, 0);
    i = std::min(i, n);
    check_sequence_length(__int128(n) + 1, args.callee);
    const Val& x = args.positional[1].val;
    note_nested(x);
    edit = [&, i](std::vector<Val>& v) { v.insert(v.begin() + i, x); };
  } else if (name == "pop") {
    want(0, 1);
    if (n == 0) fail(args.callee, "pop from an empty list");
    int64_t given = args.positional.empty() ? -1 : index_arg(0);
    int64_t i = given < 0 ? given + n : given;
    if (i < 0 || i >= n) {
      fail(args.positional[0].span, "pop index " + std::to_string(given) +
                                        " is out of range for a list of length " +
                                        std::to_string(n));
    }
    result = items[size_t(i)];
    edit = [i](std::vector<Val>& v) { v.erase(v.begin() + i); };
  } else {
    fail(args.callee, "list has no method '" + name + "' that Kiln supports");
  }
  change_list(self, edit);
  return result;
}

}  // namespace kiln::frontend
