// simplify: algebraic identities on the graph.
//
// Assumes: a graph in topological order with exact types (infer-types ran);
// canonicalize ran, though the rules also match a constant first where the op
// allows. Guarantees: each rewrite below is made only when the replacement
// has exactly the original's type (dtype, dims, device), so an identity never
// drops a broadcast (`x * ones(2, 3)` with x of shape [3] stays) or a dtype
// promotion (`i32 * 1.0` is f32 and stays):
//
//   x * 1, 1 * x           -> x     (every element of the constant is 1)
//   x + 0, 0 + x, x - 0    -> x     (alpha finite; 0 + x only with alpha 1)
//   x / 1                  -> x     (true division only: floor(x / 1) != x)
//   neg(neg(x))            -> x     logical_not(logical_not(x)) -> x (bool x)
//   transpose/permute of transpose/permute
//                          -> x when the two undo each other, else one permute
//   reshape of reshape, flatten, squeeze or unsqueeze
//                          -> one reshape (all keep row-major order)
//   reshape, flatten, squeeze, unsqueeze, expand to x's own type -> x
//   cast(x) to x's dtype   -> x
//   cast(cast(x, t1), t2)  -> cast(x, t2), or x when t2 is x's dtype, if the
//                             first cast is exact (t1 holds every value of x's
//                             dtype: bool -> any, narrower -> wider int of a
//                             compatible sign, small int -> float with enough
//                             mantissa, f16/bf16 -> f32 -> f64), except
//                             int -> float -> int (i32 -> f64 -> i16 keeps its
//                             saturating float conversion; a direct i32 -> i16
//                             wraps). f32 -> i32 -> f32 is never removed: the
//                             first cast truncates.
//
// Values are unchanged bit for bit except x + 0 where x is -0.0 (the sum is
// +0.0; -0.0 == +0.0 numerically). Replaced nodes are erased; operands they
// leave unused are left for dce.
#include <cmath>
#include <numeric>

#include "passes/graph_rewrite.h"
#include "passes/pipeline.h"

namespace kiln::passes {

namespace {

using ir::Node;
using ir::Value;

bool same_type(const Value* a, const Value* b) {
  return a->type() == b->type();
}

// The value if it may replace n's only output.
Value* if_same_type(Value* v, const Node& n) {
  return v && n.num_outputs() == 1 && same_type(v, n.output()) ? v : nullptr;
}

Node* producer_of(const Value* v, std::string_view op) {
  Node* p = v->producer();
  return p && p->op() == op ? p : nullptr;
}

double float_attr(const Node& n, const std::string& name, double fallback) {
  const ir::AttrValue* a = n.attrs().find(name);
  if (!a) return fallback;
  if (const double* d = std::get_if<double>(a)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  return NAN;
}

// --- arithmetic identities ---------------------------------------------------------------

Value* arithmetic(GraphEditor&, Node& n) {
  if (n.inputs().size() != 2 && n.inputs().size() != 1) return nullptr;
  const std::string& op = n.op();
  if (n.inputs().size() == 1) {
    if (op == "neg" || op == "logical_not") {
      if (Node* inner = producer_of(n.input(0), op)) return if_same_type(inner->input(0), n);
    }
    return nullptr;
  }
  Value* a = n.input(0);
  Value* b = n.input(1);
  if (op == "mul") {
    if (constant_all_equal(b, 1)) return if_same_type(a, n);
    if (constant_all_equal(a, 1)) return if_same_type(b, n);
  } else if (op == "add" || op == "sub") {
    double alpha = float_attr(n, "alpha", 1.0);
    if (!std::isfinite(alpha)) return nullptr;  // alpha * 0 would be NaN
    if (constant_all_equal(b, 0)) return if_same_type(a, n);
    if (op == "add" && alpha == 1.0 && constant_all_equal(a, 0)) return if_same_type(b, n);
  } else if (op == "div") {
    const ir::AttrValue* mode = n.attrs().find("rounding_mode");
    const std::string* s = mode ? std::get_if<std::string>(mode) : nullptr;
    bool true_division = !mode || std::holds_alternative<ir::NoneAttr>(*mode) || (s && s->empty());
    if (true_division && constant_all_equal(b, 1)) return if_same_type(a, n);
  }
  return nullptr;
}

// --- layout ------------------------------------------------------------------------------

// The permutation a transpose or permute applies (output dim i reads input dim
// perm[i]), or nullopt for other ops.
std::optional<std::vector<int64_t>> permutation(const Node& n) {
  if (n.inputs().empty() || !n.input(0)->type().is_tensor()) return std::nullopt;
  int64_t rank = n.input(0)->type().rank();
  auto wrap = [&](int64_t d) { return d < 0 ? d + rank : d; };
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  if (n.op() == "transpose") {
    if (rank == 0) return perm;
    int64_t d0 = wrap(n.attrs().get_int("dim0")), d1 = wrap(n.attrs().get_int("dim1"));
    if (d0 < 0 || d1 < 0 || d0 >= rank || d1 >= rank) return std::nullopt;
    std::swap(perm[size_t(d0)], perm[size_t(d1)]);
    return perm;
  }
  if (n.op() == "permute") {
    std::vector<int64_t> dims = n.attrs().get_ints("dims");
    if (int64_t(dims.size()) != rank) return std::nullopt;
    for (size_t i = 0; i < dims.size(); ++i) {
      perm[i] = wrap(dims[i]);
      if (perm[i] < 0 || perm[i] >= rank) return std::nullopt;
    }
    return perm;
  }
  return std::nullopt;
}

Value* permutations(GraphEditor& e, Node& n) {
  std::optional<std::vector<int64_t>> outer = permutation(n);
  if (!outer) return nullptr;
  std::vector<int64_t> identity(outer->size());
  std::iota(identity.begin(), identity.end(), 0);
  if (*outer == identity) return if_same_type(n.input(0), n);
  Node* inner_node = n.input(0)->producer();
  std::optional<std::vector<int64_t>> inner = inner_node ? permutation(*inner_node) : std::nullopt;
  if (!inner) return nullptr;
  std::vector<int64_t> composed(outer->size());
  for (size_t i = 0; i < composed.size(); ++i) composed[i] = (*inner)[size_t((*outer)[i])];
  Value* x = inner_node->input(0);
  if (composed == identity) return if_same_type(x, n);
  Node* p =
      e.insert_before(&n, "permute", {x}, ir::Attrs{{"dims", composed}}, {n.output()->type()});
  return p ? p->output() : nullptr;
}

bool keeps_row_major(const Node& n) {
  return n.op() == "reshape" || n.op() == "flatten" || n.op() == "squeeze" || n.op() == "unsqueeze";
}

Value* views(GraphEditor& e, Node& n) {
  if (n.inputs().empty()) return nullptr;
  bool identity_candidate = keeps_row_major(n) || n.op() == "expand";
  if (identity_candidate && n.num_outputs() == 1 && same_type(n.input(0), n.output())) {
    return n.input(0);
  }
  if (n.op() != "reshape") return nullptr;
  Node* inner = n.input(0)->producer();
  if (!inner || !keeps_row_major(*inner)) return nullptr;
  Value* x = inner->input(0);
  if (same_type(x, n.output())) return x;
  Node* r = e.insert_before(&n, "reshape", {x}, ir::Attrs{{"shape", n.attrs().get_ints("shape")}},
                            {n.output()->type()});
  return r ? r->output() : nullptr;
}

// --- casts -------------------------------------------------------------------------------

// Significant bits of a float dtype (implicit bit included).
int mantissa_bits(DType t) {
  switch (t) {
    case DType::F16:
      return 11;
    case DType::BF16:
      return 8;
    case DType::F32:
      return 24;
    case DType::F64:
      return 53;
    default:
      return 0;
  }
}

// Magnitude bits an integer dtype needs to hold every value exactly.
int value_bits(DType t) {
  return int(dtype_size(t)) * 8 - (is_signed(t) ? 1 : 0);
}

// Whether every value of `from` converts to `to` and back exactly.
bool exact_cast(DType from, DType to) {
  if (from == to || from == DType::Bool) return true;
  if (to == DType::Bool) return false;
  if (is_integral(from) && is_integral(to)) {
    if (is_signed(from) && !is_signed(to)) return false;
    return value_bits(to) >= value_bits(from);
  }
  if (is_integral(from) && is_floating(to)) return mantissa_bits(to) >= value_bits(from);
  if (is_floating(from) && is_floating(to)) {
    if (from == DType::F16 && to == DType::BF16) return false;  // bf16 has fewer mantissa bits
    if (from == DType::BF16 && to == DType::F16) return false;  // f16 has a smaller range
    return mantissa_bits(to) >= mantissa_bits(from);
  }
  return false;  // float -> int truncates
}

Value* casts(GraphEditor& e, Node& n) {
  if (n.op() != "cast" || !n.input(0)->type().is_tensor()) return nullptr;
  if (same_type(n.input(0), n.output())) return n.input(0);
  Node* inner = producer_of(n.input(0), "cast");
  if (!inner || !inner->input(0)->type().is_tensor()) return nullptr;
  Value* x = inner->input(0);
  DType from = x->type().dtype(), mid = inner->output()->type().dtype();
  DType to = n.output()->type().dtype();
  if (!exact_cast(from, mid)) return nullptr;
  // int -> float -> int: the float-to-int conversion saturates where a direct
  // int-to-int cast wraps, so the chain is not one cast.
  if (is_integral(from) && is_floating(mid) && is_integral(to)) return nullptr;
  if (same_type(x, n.output())) return x;
  Node* c = e.insert_before(&n, "cast", {x}, ir::Attrs{{"dtype", n.attrs().get_dtype("dtype")}},
                            {n.output()->type()});
  return c ? c->output() : nullptr;
}

}  // namespace

bool simplify(ir::Graph& g) {
  using Rule = Value* (*)(GraphEditor&, Node&);
  static constexpr Rule kRules[] = {arithmetic, permutations, views, casts};
  GraphEditor e(g);
  for (Node* n : e.nodes()) {
    e.resolve_operands(n);
    if (!is_pure(*n) || n->num_outputs() != 1) continue;
    for (Rule rule : kRules) {
      if (Value* v = rule(e, *n)) {
        e.replace(n, {v});
        break;
      }
    }
  }
  return e.commit();
}

}  // namespace kiln::passes
