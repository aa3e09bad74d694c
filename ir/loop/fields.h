// The one structural description of loop IR: for every node kind, the fields
// that make two nodes of that kind the same, in the order they are compared,
// hashed and written. The canonical writer (the kernel-cache key), equal()
// and structural_hash() (canonical.cpp) are all derived from these lists, so
// they cannot disagree about what a node holds.
//
// Adding a kind to nodes.def without a Fields<> entry here does not compile:
// the dispatch below is generated from nodes.def and names Fields<Kind>::List
// for every kind, which trips the static_assert in for_each_field.
//
// Not listed, on purpose: an expression's VType (every consumer handles it
// for all expressions at once, before the fields) and Ramp::lanes /
// Broadcast::lanes (the lane count is the type's). The order of a kind's
// fields is part of the canonical byte format: reordering changes cache keys.
#pragma once

#include <concepts>
#include <cstddef>

#include "ir/loop/loop_ir.h"
#include "kiln/error.h"

namespace kiln::loop {

// A list of member pointers, e.g. FieldList<&Binary::op, &Binary::a, &Binary::b>.
template <auto... Members>
struct FieldList {
  static constexpr size_t size = sizeof...(Members);
};

// Specialized once per node kind (and for Kernel) with `using List = FieldList<...>`.
template <typename Node>
struct Fields;

// One line per kind where it fits: the table reads as one.
// clang-format off
template <> struct Fields<IntImm> { using List = FieldList<&IntImm::value>; };
template <> struct Fields<FloatImm> { using List = FieldList<&FloatImm::value>; };
template <> struct Fields<Var> { using List = FieldList<&Var::name>; };
template <> struct Fields<Cast> { using List = FieldList<&Cast::value>; };
template <> struct Fields<Binary> { using List = FieldList<&Binary::op, &Binary::a, &Binary::b>; };
template <> struct Fields<Compare> {
  using List = FieldList<&Compare::op, &Compare::a, &Compare::b>;
};
template <> struct Fields<Not> { using List = FieldList<&Not::a>; };
template <> struct Fields<Select> {
  using List = FieldList<&Select::cond, &Select::true_value, &Select::false_value>;
};
template <> struct Fields<Load> {
  using List = FieldList<&Load::buf, &Load::index, &Load::predicate>;
};
template <> struct Fields<Ramp> { using List = FieldList<&Ramp::base, &Ramp::stride>; };
template <> struct Fields<Broadcast> { using List = FieldList<&Broadcast::value>; };
template <> struct Fields<Call> { using List = FieldList<&Call::name, &Call::args>; };
template <> struct Fields<Let> { using List = FieldList<&Let::var, &Let::value, &Let::body>; };

template <> struct Fields<For> {
  using List = FieldList<&For::for_kind, &For::var, &For::min, &For::extent, &For::body>;
};
template <> struct Fields<Store> {
  using List = FieldList<&Store::buf, &Store::index, &Store::value, &Store::predicate>;
};
template <> struct Fields<Block> { using List = FieldList<&Block::stmts>; };
template <> struct Fields<Allocate> {
  using List = FieldList<&Allocate::buf, &Allocate::scope, &Allocate::size, &Allocate::body>;
};
template <> struct Fields<IfThenElse> {
  using List = FieldList<&IfThenElse::cond, &IfThenElse::then_case, &IfThenElse::else_case>;
};
template <> struct Fields<LetStmt> {
  using List = FieldList<&LetStmt::var, &LetStmt::value, &LetStmt::body>;
};
template <> struct Fields<Barrier> { using List = FieldList<>; };
template <> struct Fields<ExternCall> {
  using List = FieldList<&ExternCall::name, &ExternCall::args, &ExternCall::bufs>;
};

template <> struct Fields<Kernel> {
  using List = FieldList<&Kernel::name, &Kernel::buffers, &Kernel::scalars, &Kernel::body>;
};
// clang-format on

template <typename Node>
concept Described = requires {
  typename Fields<Node>::List;
};

namespace fields_detail {
template <typename Node, typename F, auto... M>
void each(const Node& n, F& f, FieldList<M...>) {
  (f(n.*M), ...);
}
template <typename Node, typename F, auto... M>
bool all_pairs(const Node& a, const Node& b, F& f, FieldList<M...>) {
  return (f(a.*M, b.*M) && ...);  // left to right, stops at the first false
}
}  // namespace fields_detail

// f(field) for each field of `n`, in order.
template <typename Node, typename F>
void for_each_field(const Node& n, F&& f) {
  static_assert(Described<Node>,
                "a loop-IR node kind without a Fields<> entry in ir/loop/fields.h");
  fields_detail::each(n, f, typename Fields<Node>::List{});
}

// f(field of a, same field of b) for each field while f returns true.
template <typename Node, typename F>
bool all_field_pairs(const Node& a, const Node& b, F&& f) {
  static_assert(Described<Node>,
                "a loop-IR node kind without a Fields<> entry in ir/loop/fields.h");
  return fields_detail::all_pairs(a, b, f, typename Fields<Node>::List{});
}

// f(static_cast<const Kind&>(*e)) for the kind of a defined expression; one
// case per expression kind of nodes.def.
template <typename F>
decltype(auto) visit_expr_kind(const ExprNode* e, F&& f) {
  switch (e->kind) {
#define KILN_EXPR_NODE(Name) \
  case NodeKind::Name:       \
    return f(static_cast<const Name&>(*e));
#include "ir/loop/nodes.def"
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "statement kind " << node_kind_name(e->kind) << " in an expression");
}

// The same for a defined statement.
template <typename F>
decltype(auto) visit_stmt_kind(const StmtNode* s, F&& f) {
  switch (s->kind) {
#define KILN_STMT_NODE(Name) \
  case NodeKind::Name:       \
    return f(static_cast<const Name&>(*s));
#include "ir/loop/nodes.def"
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "expression kind " << node_kind_name(s->kind) << " in a statement");
}

}  // namespace kiln::loop
