// Op table, part 3: layout ops (view/reshape/permute/transpose/expand/
// squeeze/flatten/narrow/select/cat/stack/split/chunk/unbind), copies and
// dtype conversions (.to, .float(), ...), and the compile-time shape queries
// (.size(), .dim(), .numel()). View-like results share their input's alias
// class so in-place updates through them are tracked (see lower.h).
#include <algorithm>

#include "frontend/lower.h"
#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

const unsigned TM = kTorch | kMethod;

Val view(Bound& b, ir::Value* v) {
  return b.L.view_of(v, b.val("input"));
}

Val emit_view(Bound& b, const std::string& op, ir::Attrs attrs) {
  return view(b, b.L.apply1(op, {b.tensor("input")}, std::move(attrs), b.call.callee));
}

// A shape argument; one symbolic size standing for "the rest" becomes -1.
std::vector<int64_t> shape_arg(Bound& b, const std::string& name) {
  const Val* v = &b.val(name);
  if (v->is_seq() && v->items.size() == 1 && v->items[0].is_seq()) v = &v->items[0];
  if (v->is_seq()) {
    int syms = 0;
    bool has_minus_one = false;
    for (const Val& item : v->items) {
      syms += item.kind == Val::Kind::SymDim;
      has_minus_one = has_minus_one || (item.kind == Val::Kind::Int && item.i == -1);
    }
    if (syms == 1 && !has_minus_one) {
      std::vector<int64_t> out;
      for (const Val& item : v->items) out.push_back(item.kind == Val::Kind::SymDim ? -1 : item.i);
      return out;
    }
  }
  return b.ints(name);
}

Val cast_to(Bound& b, DType to) {
  ir::Value* x = b.tensor("input");
  if (x->type().dtype() == to) return b.val("input");  // PyTorch returns self
  return b.L.fresh(b.L.apply1("cast", {x}, {{"dtype", to}}, b.call.callee));
}

Val normalize_index(Bound& b, ir::Value* x, int64_t dim, int64_t index, const std::string& what,
                    int64_t* out) {
  int64_t size = b.L.static_dim(x, dim, b.span("input"));
  if (index < -size || index >= size) {
    b.fail(what, what + " " + std::to_string(index) + " is out of range for dimension " +
                     std::to_string(dim) + " of size " + std::to_string(size));
  }
  *out = index < 0 ? index + size : index;
  return {};
}

std::vector<ir::Value*> tensor_list(Bound& b, const std::string& name) {
  const Val& v = b.val(name);
  if (!v.is_seq())
    b.fail(name, "'" + name + "' must be a list or tuple of tensors, got " + kind_name(v));
  if (v.items.empty()) b.fail(name, "expected a non-empty list of tensors");
  std::vector<ir::Value*> out;
  for (const Val& item : v.items) {
    if (item.kind == Val::Kind::Poison) throw Abort{};
    if (!item.is_tensor())
      b.fail(name, "'" + name + "' must hold tensors, found " + kind_name(item));
    out.push_back(item.value);
  }
  return out;
}

// A cat or stack of more than this many tensors is lowered as a tree of
// joins of at most kMaxJoinPieces each: one node with thousands of operands
// makes fusion and code generation quadratic in the operand count.
constexpr size_t kMaxJoinPieces = 32;

// Checks the whole join as one op first, so that an error names the user's
// operand (its index in the full list), not one inside a sub-join.
void check_join(Bound& b, const std::string& op, const std::vector<ir::Value*>& ins,
                const ir::Attrs& attrs) {
  const ir::OpDef* def = ir::OpRegistry::global().find(op);
  KILN_INTERNAL_CHECK(def, "op " << op << " is not registered");
  std::vector<ir::Type> types;
  types.reserve(ins.size());
  for (ir::Value* v : ins) types.push_back(v->type());
  try {
    ir::infer_types(*def, types, ir::complete_attrs(*def, attrs));
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(op + ":", 0) != 0) msg = op + ": " + msg;
    b.L.fail(b.call.callee, msg + " [in " + op + " of " + std::to_string(ins.size()) + " tensors]");
  }
}

// torch.cat / torch.stack; wide ones as a tree of joins (see kMaxJoinPieces).
// stack(ts, d) is cat(stack(group), d) over groups, so the new dim keeps its
// place; cat is associative along d.
Val join(Bound& b, const std::string& op) {
  std::vector<ir::Value*> ins = tensor_list(b, "tensors");
  ir::Attrs attrs{{"dim", b.int_("dim")}};
  if (ins.size() <= kMaxJoinPieces) return emit(b, op, std::move(ins), attrs);
  check_join(b, op, ins, attrs);
  std::string level_op = op;
  while (ins.size() > kMaxJoinPieces) {
    std::vector<ir::Value*> next;
    for (size_t i = 0; i < ins.size(); i += kMaxJoinPieces) {
      std::vector<ir::Value*> group(
          ins.begin() + ptrdiff_t(i),
          ins.begin() + ptrdiff_t(std::min(ins.size(), i + kMaxJoinPieces)));
      next.push_back(b.L.apply1(level_op, std::move(group), attrs, b.call.callee));
    }
    ins = std::move(next);
    level_op = "cat";
  }
  return emit(b, level_op, std::move(ins), attrs);
}

Val outputs_tuple(Bound& b, const std::vector<ir::Value*>& outs) {
  std::vector<Val> items;
  for (ir::Value* v : outs) items.push_back(view(b, v));
  return Val::tuple(std::move(items));
}

}  // namespace

void add_layout_ops(std::vector<OpEntry>& t) {
  for (const char* name : {"view", "reshape"}) {
    t.push_back({name, kMethod, "input, *shape", [](Bound& b) {
                   return emit_view(b, "reshape", {{"shape", shape_arg(b, "shape")}});
                 }});
  }
  t.push_back({"reshape", kTorch, "input, shape", [](Bound& b) {
                 return emit_view(b, "reshape", {{"shape", shape_arg(b, "shape")}});
               }});
  for (const char* name : {"view_as", "reshape_as"}) {
    t.push_back({name, kMethod, "input, other", [](Bound& b) {
                   std::vector<int64_t> shape;
                   ir::Value* o = b.tensor("other");
                   for (int64_t d = 0; d < o->type().rank(); ++d)
                     shape.push_back(b.L.static_dim(o, d, b.span("other")));
                   return emit_view(b, "reshape", {{"shape", shape}});
                 }});
  }
  t.push_back({"permute", kMethod, "input, *dims", [](Bound& b) {
                 return emit_view(b, "permute", {{"dims", b.ints("dims")}});
               }});
  t.push_back({"permute", kTorch, "input, dims", [](Bound& b) {
                 return emit_view(b, "permute", {{"dims", b.ints("dims")}});
               }});
  for (const char* name : {"transpose", "swapaxes", "swapdims"}) {
    t.push_back(
        {name, TM, "input, dim0, dim1", [](Bound& b) {
           return emit_view(b, "transpose", {{"dim0", b.int_("dim0")}, {"dim1", b.int_("dim1")}});
         }});
  }
  t.push_back({"t", TM, "input", [](Bound& b) {
                 int64_t r = b.tensor("input")->type().rank();
                 if (r > 2)
                   b.fail("input",
                          "t() expects a tensor with <= 2 dimensions, got " + std::to_string(r));
                 if (r < 2) return b.val("input");
                 return emit_view(b, "transpose", {{"dim0", int64_t(0)}, {"dim1", int64_t(1)}});
               }});
  t.push_back({"expand", kMethod, "input, *size", [](Bound& b) {
                 return emit_view(b, "expand", {{"size", shape_arg(b, "size")}});
               }});
  t.push_back({"expand_as", kMethod, "input, other", [](Bound& b) {
                 ir::Value* o = b.tensor("other");
                 std::vector<int64_t> shape;
                 for (int64_t d = 0; d < o->type().rank(); ++d)
                   shape.push_back(b.L.static_dim(o, d, b.span("other")));
                 return emit_view(b, "expand", {{"size", shape}});
               }});
  t.push_back({"squeeze", TM, "input, dim=None", [](Bound& b) {
                 std::vector<int64_t> dims;
                 if (!b.is_none("dim")) dims = b.ints("dim");
                 return emit_view(b, "squeeze", {{"dim", dims}});
               }});
  t.push_back({"unsqueeze", TM, "input, dim", [](Bound& b) {
                 return emit_view(b, "unsqueeze", {{"dim", b.int_("dim")}});
               }});
  t.push_back({"flatten", TM, "input, start_dim=0, end_dim=-1", [](Bound& b) {
                 return emit_view(
                     b, "flatten",
                     {{"start_dim", b.int_("start_dim")}, {"end_dim", b.int_("end_dim")}});
               }});
  t.push_back({"narrow", TM, "input, dim, start, length", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 int64_t dim = b.int_("dim"), start = 0, len = b.int_("length");
                 normalize_index(b, x, dim, b.int_("start"), "start", &start);
                 int64_t size = b.L.static_dim(x, dim, b.span("input"));
                 if (len < 0 || len > size - start) {  // start + len may overflow
                   b.fail("length", "start (" + std::to_string(start) + ") + length (" +
                                        std::to_string(len) + ") exceeds dimension size (" +
                                        std::to_string(size) + ")");
                 }
                 return emit_view(
                     b, "slice",
                     {{"dim", dim}, {"start", start}, {"end", start + len}, {"step", int64_t(1)}});
               }});
  t.push_back({"select", TM, "input, dim, index", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 int64_t dim = b.int_("dim"), index = 0;
                 normalize_index(b, x, dim, b.int_("index"), "index", &index);
                 return emit_view(b, "select", {{"dim", dim}, {"index", index}});
               }});
  for (const char* name : {"cat", "concat", "concatenate"}) {
    t.push_back({name, kTorch, "tensors, dim=0", [](Bound& b) { return join(b, "cat"); }});
  }
  t.push_back({"stack", kTorch, "tensors, dim=0", [](Bound& b) { return join(b, "stack"); }});
  t.push_back({"split", TM, "input, split_size_or_sections, dim=0", [](Bound& b) {
                 const Val& s = b.val("split_size_or_sections");
                 ir::Attrs attrs;
                 if (s.is_seq()) {
                   attrs.set("sizes", b.ints("split_size_or_sections"));
                 } else {
                   int64_t n = b.int_("split_size_or_sections");
                   if (n <= 0)
                     b.fail("split_size_or_sections",
                            "split size must be positive, got " + std::to_string(n));
                   attrs.set("split_size", n);
                 }
                 attrs.set("dim", b.int_("dim"));
                 return outputs_tuple(
                     b, b.L.apply("split", {b.tensor("input")}, attrs, b.call.callee));
               }});
  t.push_back({"chunk", TM, "input, chunks, dim=0", [](Bound& b) {
                 int64_t n = b.int_("chunks");
                 if (n <= 0) b.fail("chunks", "chunks must be positive, got " + std::to_string(n));
                 return outputs_tuple(
                     b, b.L.apply("chunk", {b.tensor("input")},
                                  {{"chunks", n}, {"dim", b.int_("dim")}}, b.call.callee));
               }});
  t.push_back(
      {"unbind", TM, "input, dim=0", [](Bound& b) {
         ir::Value* x = b.tensor("input");
         int64_t dim = b.int_("dim");
         int64_t n = b.L.static_dim(x, dim, b.span("input"));
         std::vector<ir::Value*> outs;
         for (int64_t k = 0; k < n; ++k) {
           outs.push_back(b.L.apply1("select", {x}, {{"dim", dim}, {"index", k}}, b.call.callee));
         }
         return outputs_tuple(b, outs);
       }});

  // --- copies and conversions ----------------------------------------------------------------
  t.push_back(
      {"contiguous", kMethod, "input", [](Bound& b) { return emit_view(b, "contiguous", {}); }});
  t.push_back(
      {"clone", TM, "input", [](Bound& b) { return emit(b, "copy", {b.tensor("input")}); }});
  t.push_back({"detach", TM, "input", [](Bound& b) { return b.val("input"); }});
  t.push_back({"to", kMethod,
               "input, dtype_or_device=None, dtype=None, non_blocking=False, copy=False",
               [](Bound& b) {
                 std::optional<DType> dt;
                 const Val& first = b.val("dtype_or_device");
                 if (first.kind == Val::Kind::DType) {
                   dt = first.dtype;
                 } else if (first.is_tensor()) {
                   dt = first.value->type().dtype();  // x.to(other)
                 } else if (first.kind == Val::Kind::Str) {
                   if (first.s != "cpu") {
                     b.fail("dtype_or_device",
                            "moving tensors between devices inside a script is not "
                            "supported; choose the device when compiling");
                   }
                 } else if (first.kind != Val::Kind::None) {
                   b.fail("dtype_or_device", "expected a dtype, got " + kind_name(first));
                 }
                 if (auto d = b.dtype("dtype")) dt = d;
                 if (!dt) return b.val("input");
                 if (b.bool_("copy")) return emit(b, "cast", {b.tensor("input")}, {{"dtype", *dt}});
                 return cast_to(b, *dt);
               }});
  t.push_back(
      {"type", kMethod, "input, dtype", [](Bound& b) { return cast_to(b, *b.dtype("dtype")); }});
  t.push_back({"type_as", kMethod, "input, other",
               [](Bound& b) { return cast_to(b, b.tensor("other")->type().dtype()); }});
  struct Conv {
    const char* name;
    DType dt;
  };
  const Conv convs[] = {{"float", DType::F32},     {"double", DType::F64}, {"half", DType::F16},
                        {"bfloat16", DType::BF16}, {"long", DType::I64},   {"int", DType::I32},
                        {"short", DType::I16},     {"char", DType::I8},    {"byte", DType::U8},
                        {"bool", DType::Bool}};
  for (const Conv& c : convs) {
    DType dt = c.dt;
    t.push_back({c.name, kMethod, "input", [dt](Bound& b) { return cast_to(b, dt); }});
  }

  // --- compile-time queries --------------------------------------------------------------------
  t.push_back({"size", kMethod, "input, dim=None", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 int64_t r = x->type().rank();
                 if (b.is_none("dim")) {
                   std::vector<Val> dims;
                   for (int64_t d = 0; d < r; ++d) dims.push_back(b.L.size_val(x, d));
                   return Val::tuple(std::move(dims));
                 }
                 int64_t d = b.int_("dim");
                 if (d < -r || d >= r) {
                   b.fail("dim", "dimension " + std::to_string(d) +
                                     " is out of range for a tensor of rank " + std::to_string(r));
                 }
                 return b.L.size_val(x, d);
               }});
  for (const char* name : {"dim", "ndimension"}) {
    t.push_back({name, kMethod, "input",
                 [](Bound& b) { return Val::int_(b.tensor("input")->type().rank()); }});
  }
  t.push_back({"numel", TM, "input", [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 int64_t n = 1;
                 for (int64_t d = 0; d < x->type().rank(); ++d)
                   n *= b.L.static_dim(x, d, b.span("input"));
                 return Val::int_(n);
               }});
  t.push_back({"is_floating_point", TM, "input", [](Bound& b) {
                 return Val::bool_(is_floating(b.tensor("input")->type().dtype()));
               }});

  // --- in-place methods without an out-of-place twin --------------------------------------------
  t.push_back(
      {"fill_", kMethod, "input, value",
       [](Bound& b) {
         ir::Value* x = b.tensor("input");
         ir::Value* v = b.operand("value");
         return emit(
             b, "where",
             {b.L.apply1("full", {},
                         {{"size", std::vector<int64_t>{}}, {"value", 1.0}, {"dtype", DType::Bool}},
                         b.call.callee),
              v, x});
       },
       true});
  t.push_back({"zero_", kMethod, "input",
               [](Bound& b) {
                 // where(true, 0, x) rather than x * 0, which keeps NaN and inf.
                 ir::Value* x = b.tensor("input");
                 ir::Value* yes = b.L.apply1(
                     "full", {},
                     {{"size", std::vector<int64_t>{}}, {"value", 1.0}, {"dtype", DType::Bool}},
                     b.call.callee);
                 return emit(b, "where", {yes, b.L.constant(Val::int_(0), b.call.callee), x});
               },
               true});
  t.push_back({"copy_", kMethod, "input, src, non_blocking=False",
               [](Bound& b) {
                 ir::Value* x = b.tensor("input");
                 ir::Value* src = b.L.cast(b.tensor("src"), x->type().dtype(), b.call.callee);
                 std::vector<int64_t> shape;
                 for (int64_t d = 0; d < x->type().rank(); ++d)
                   shape.push_back(b.L.static_dim(x, d, b.span("input")));
                 if (src->type().dims() == x->type().dims()) return emit(b, "copy", {src});
                 return emit(b, "expand", {src}, {{"size", shape}});
               },
               true});
}

}  // namespace kiln::frontend
