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
#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

// Replaces the items of every list with identity `id` inside `v`.
void replace_items(Val& v, int64_t id, const std::vector<Val>& items) {
  if (v.kind == Val::Kind::List && v.storage == id) {
    v.items = items;
    return;
  }
  if (v.is_seq() || v.kind == Val::Kind::Method) {
    for (Val& item : v.items) replace_items(item, id, items);
  }
}

// The list with identity `id` inside `v`, if any.
const Val* find_list(const Val& v, int64_t id) {
  if (v.kind == Val::Kind::List && v.storage == id) return &v;
  if (v.is_seq() || v.kind == Val::Kind::Method) {
    for (const Val& item : v.items) {
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

void Lowerer::update_list(const Val& list, std::vector<Val> items) {
  if (list.storage == 0) return;  // a temporary: nobody sees the change
  for (Frame& f : frames_) {
    for (auto& [name, v] : f.vars) replace_items(v, list.storage, items);
  }
  for (auto& [name, v] : globals_) replace_items(v, list.storage, items);
}

void Lowerer::set_list_item(const Val& list, const Expr& index, const Val& v) {
  if (index.kind == ExprKind::Slice)
    fail(index.span, "slice assignment on a list is not supported yet");
  Val k = eval(index);
  if (k.kind != Val::Kind::Int && k.kind != Val::Kind::Bool) {
    if (k.kind == Val::Kind::SymDim) constant(k, index.span);
    fail(index.span, "list indices must be integers, got " + kind_name(k));
  }
  int64_t n = int64_t(list.items.size());
  int64_t i = k.i < 0 ? k.i + n : k.i;
  if (i < 0 || i >= n) {
    fail(index.span, "list assignment index " + std::to_string(k.i) +
                         " is out of range for a list of length " + std::to_string(n));
  }
  std::vector<Val> items = list.items;
  items[size_t(i)] = v;
  update_list(list, std::move(items));
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
  // The arguments are evaluated after `self` was looked up and may have
  // changed the list (`xs.append(xs.pop())`): start from its current items.
  std::vector<Val> items = self.items;
  if (self.storage != 0) {
    for (const Frame& f : frames_) {
      for (const auto& [n, v] : f.vars) {
        if (const Val* now = find_list(v, self.storage)) items = now->items;
      }
    }
  }
  Val result = Val::none();
  if (name == "append") {
    want(1, 1);
    check_sequence_length(__int128(items.size()) + 1, args.callee);
    items.push_back(args.positional[0].val);
  } else if (name == "extend") {
    want(1, 1);
    const Val& more = args.positional[0].val;
    if (!more.is_seq()) {
      fail(args.positional[0].span, fn + "() needs a list or tuple here, got " + kind_name(more));
    }
    check_sequence_length(__int128(items.size()) + __int128(more.items.size()), args.callee);
    items.insert(items.end(), more.items.begin(), more.items.end());
  } else if (name == "insert") {
    want(2, 2);
    // Python clamps the position into [0, len].
    int64_t n = int64_t(items.size()), i = index_arg(0);
    if (i < 0) i = std::max<int64_t>(i + n, 0);
    i = std::min(i, n);
    check_sequence_length(__int128(items.size()) + 1, args.callee);
    items.insert(items.begin() + i, args.positional[1].val);
  } else if (name == "pop") {
    want(0, 1);
    int64_t n = int64_t(items.size());
    if (n == 0) fail(args.callee, "pop from an empty list");
    int64_t given = args.positional.empty() ? -1 : index_arg(0);
    int64_t i = given < 0 ? given + n : given;
    if (i < 0 || i >= n) {
      fail(args.positional[0].span, "pop index " + std::to_string(given) +
                                        " is out of range for a list of length " +
                                        std::to_string(n));
    }
    result = items[size_t(i)];
    items.erase(items.begin() + i);
  } else {
    fail(args.callee, "list has no method '" + name + "' that Kiln supports");
  }
  update_list(self, std::move(items));
  return result;
}

}  // namespace kiln::frontend
