// Op table, part 2: softmax, normalization, matmul/linear, conv and pooling
// (torch.nn.functional spellings with their argument conventions: int or
// tuple sizes, padding='same'), and tensor factories (zeros, full, arange,
// tensor, eye, tril/triu).
#include <cmath>

#include "frontend/lower.h"
#include "kiln/error.h"

namespace kiln::frontend {

namespace {

const unsigned TM = kTorch | kMethod;

// An int or a tuple of 2 ints, as F.conv2d/F.max_pool2d take them.
std::vector<int64_t> pair(Bound& b, const std::string& name) {
  std::vector<int64_t> v = b.ints(name);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) {
    b.fail(name, "'" + name + "' must be an int or a pair of ints, got " +
                     std::to_string(v.size()) + " values");
  }
  return v;
}

Val softmax(Bound& b, const std::string& op) {
  if (b.is_none("dim")) b.fail("softmax without an explicit dim is not supported; pass dim=");
  ir::Attrs attrs{{"dim", b.int_("dim")}};
  if (auto d = b.dtype("dtype")) attrs.set("dtype", *d);
  return emit(b, op, {b.tensor("input")}, attrs);
}

Val conv2d(Bound& b) {
  ir::Value* x = b.tensor("input");
  ir::Value* w = b.tensor("weight");
  std::vector<int64_t> stride = pair(b, "stride"), dilation = pair(b, "dilation");
  std::vector<int64_t> padding;
  const Val& p = b.val("padding");
  if (p.kind == Val::Kind::Str) {
    if (p.s == "valid") {
      padding = {0, 0};
    } else if (p.s == "same") {
      if (stride[0] != 1 || stride[1] != 1) {
        b.fail("padding", "padding='same' is not supported for strided convolutions");
      }
      // Total padding dilation*(k-1) per axis; the odd one goes after, as in PyTorch.
      padding.resize(4);
      for (int axis = 0; axis < 2; ++axis) {
        int64_t k = b.L.static_dim(w, 2 + axis, b.span("weight"));
        int64_t total = dilation[size_t(axis)] * (k - 1);
        padding[size_t(axis * 2)] = total / 2;
        padding[size_t(axis * 2 + 1)] = total - total / 2;
      }
      if (padding[0] == padding[1] && padding[2] == padding[3]) padding = {padding[0], padding[2]};
    } else {
      b.fail("padding",
             "padding must be 'same', 'valid', an int or a pair of ints, got '" + p.s + "'");
    }
  } else {
    padding = pair(b, "padding");
  }
  return emit(b, "conv2d", {x, w, b.opt_tensor("bias")},
              {{"stride", stride},
               {"padding", padding},
               {"dilation", dilation},
               {"groups", b.int_("groups")}});
}

Val pool_stride(Bound& b) {
  // stride=None (or []) means "same as the kernel"; the registry spells that [].
  if (b.is_none("stride")) return Val::tuple({});
  const Val& s = b.val("stride");
  if (s.is_seq() && s.items.empty()) return s;
  std::vector<Val> items;
  for (int64_t v : pair(b, "stride")) items.push_back(Val::int_(v));
  return Val::tuple(items);
}

std::vector<int64_t> as_ints(const Val& v) {
  std::vector<int64_t> out;
  for (const Val& i : v.items) out.push_back(i.i);
  return out;
}

Val factory(Bound& b, double value, std::optional<DType> dt) {
  std::vector<int64_t> size = b.ints("size");
  for (int64_t s : size) {
    if (s < 0) b.fail("size", "negative size " + std::to_string(s));
  }
  return emit(b, "full", {},
              {{"size", size}, {"value", value}, {"dtype", dt.value_or(default_float())}});
}

// A tensor of x's shape filled with `value` (zeros_like and friends).
Val factory_like(Bound& b, double value, std::optional<DType> dt) {
  ir::Value* x = b.tensor("input");
  if (!ir::dims_are_static(x->type().dims())) {
    b.fail("input",
           "a tensor with symbolic sizes " + x->type().str() + " is not supported yet here");
  }
  return emit(b, "full", {},
              {{"size", ir::static_shape(x->type().dims())},
               {"value", value},
               {"dtype", dt.value_or(x->type().dtype())}});
}

DType dtype_of_number(const Val& v) {
  if (v.kind == Val::Kind::Bool) return DType::Bool;
  if (v.kind == Val::Kind::Int) return DType::I64;
  return default_float();
}

// Collects a nested list of numbers into a shape and flat values.
void flatten_data(Bound& b, const Val& v, size_t depth, Shape& shape, std::vector<double>& out,
                  DType& dt) {
  if (v.is_number()) {
    if (depth != shape.size()) b.fail("data", "ragged nested list");
    if (v.kind == Val::Kind::Float) dt = default_float();
    if (v.kind == Val::Kind::Int && dt == DType::Bool) dt = DType::I64;
    out.push_back(v.num());
    return;
  }
  if (!v.is_seq())
    b.fail("data", "torch.tensor needs numbers or nested lists of numbers, got " + kind_name(v));
  if (depth == shape.size()) {
    shape.push_back(int64_t(v.items.size()));
  } else if (depth > shape.size() || shape[depth] != int64_t(v.items.size())) {
    b.fail("data", "ragged nested list");
  }
  for (const Val& item : v.items) flatten_data(b, item, depth + 1, shape, out, dt);
}

Val tensor_literal(Bound& b) {
  const Val& data = b.val("data");
  if (data.is_tensor()) b.fail("data", "torch.tensor of a tensor is not supported; use .clone()");
  Shape shape;
  std::vector<double> flat;
  DType dt = DType::Bool;
  flatten_data(b, data, 0, shape, flat, dt);
  if (auto d = b.dtype("dtype")) dt = *d;
  if (shape.empty()) {
    return emit(b, "full", {},
                {{"size", std::vector<int64_t>{}}, {"value", flat[0]}, {"dtype", dt}});
  }
  Tensor t = Tensor::empty(shape, dt);
  Tensor view = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t k = 0; k < t.numel(); ++k) view.set(std::vector<int64_t>{k}, flat[size_t(k)]);
  try {
    return b.L.fresh(b.L.graph().constant(t, b.L.file().loc(b.call.callee)));
  } catch (const Error& e) {
    b.L.fail(b.call.callee, e.what());
  }
}

// tril/triu: keep elements on one side of a diagonal of the last two dims.
Val tri(Bound& b, bool lower) {
  ir::Value* x = b.tensor("input");
  Lowerer& L = b.L;
  const Span& at = b.call.callee;
  int64_t rows = L.static_dim(x, -2, at), cols = L.static_dim(x, -1, at);
  auto ar = [&](int64_t n, int64_t dim) {
    ir::Value* a =
        L.apply1("arange", {},
                 {{"start", 0.0}, {"end", double(n)}, {"step", 1.0}, {"dtype", DType::I64}}, at);
    return L.apply1("unsqueeze", {a}, {{"dim", dim}}, at);
  };
  // col - row <= k (tril) or >= k (triu)
  ir::Value* diff = L.apply1("sub", {ar(cols, 0), ar(rows, 1)}, {}, at);
  ir::Value* mask = L.apply1(lower ? "le" : "ge", {diff, b.operand("diagonal")}, {}, at);
  return emit(b, "where", {mask, x, L.constant(Val::int_(0), at)});
}

}  // namespace

void add_nn_ops(std::vector<OpEntry>& t) {
  // --- softmax and normalization ---------------------------------------------------------
  for (const char* name : {"softmax", "log_softmax"}) {
    std::string op = name;
    t.push_back({name, TM, "input, dim, dtype=None", [op](Bound& b) { return softmax(b, op); }});
    t.push_back({name, kF, "input, dim=None, _stacklevel=3, dtype=None",
                 [op](Bound& b) { return softmax(b, op); }});
  }
  t.push_back({"layer_norm", kF | kTorch,
               "input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True",
               [](Bound& b) {
                 return emit(
                     b, "layer_norm",
                     {b.tensor("input"), b.opt_tensor("weight"), b.opt_tensor("bias")},
                     {{"normalized_shape", b.ints("normalized_shape")}, {"eps", b.float_("eps")}});
               }});
  t.push_back(
      {"rms_norm", kF | kTorch, "input, normalized_shape, weight=None, eps=None", [](Bound& b) {
         ir::Attrs attrs{{"normalized_shape", b.ints("normalized_shape")}};
         if (!b.is_none("eps")) attrs.set("eps", b.float_("eps"));
         return emit(b, "rms_norm", {b.tensor("input"), b.opt_tensor("weight")}, attrs);
       }});
  auto batch_norm = [](Bound& b) {
    if (b.bool_("training")) {
      b.fail("training", "batch_norm in training mode is not supported; pass training=False");
    }
    return emit(b, "batch_norm",
                {b.tensor("input"), b.tensor("running_mean"), b.tensor("running_var"),
                 b.opt_tensor("weight"), b.opt_tensor("bias")},
                {{"eps", b.float_("eps")}});
  };
  t.push_back({"batch_norm", kF,
               "input, running_mean, running_var, weight=None, bias=None, training=False, "
               "momentum=0.1, eps=1e-05",
               batch_norm});
  t.push_back({"batch_norm", kTorch,
               "input, weight, bias, running_mean, running_var, training, momentum, eps, "
               "cudnn_enabled=True",
               batch_norm});
  // Dropout in eval mode is the identity; in training it is random.
  for (const char* name : {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                           "feature_alpha_dropout"}) {
    t.push_back({name, kF, "input, p=0.5, training=True, inplace=False", [](Bound& b) {
                   if (b.bool_("training")) {
                     b.fail("training",
                            "dropout with training=True is random and is not "
                            "supported; pass training=False (eval mode)");
                   }
                   b.tensor("input");
                   return b.val("input");
                 }});
  }
  t.push_back({"dropout", kTorch, "input, p, train", [](Bound& b) {
                 if (b.bool_("train")) {
                   b.fail("train",
                          "dropout with train=True is random and is not supported; "
                          "pass train=False (eval mode)");
                 }
                 b.tensor("input");
                 return b.val("input");
               }});

  // --- contractions ---------------------------------------------------------------------------
  t.push_back({"matmul", TM, "input, other", [](Bound& b) {
                 return emit(b, "matmul", {b.tensor("input"), b.tensor("other")});
               }});
  t.push_back({"mm", TM, "input, mat2", [](Bound& b) {
                 ir::Value* a = b.tensor("input");
                 ir::Value* m = b.tensor("mat2");
                 if (a->type().rank() != 2)
                   b.fail("input", "operand 'input' must be 2-D, got " + a->type().str());
                 if (m->type().rank() != 2)
                   b.fail("mat2", "operand 'mat2' must be 2-D, got " + m->type().str());
                 return emit(b, "matmul", {a, m});
               }});
  t.push_back({"mv", TM, "input, vec", [](Bound& b) {
                 return emit(b, "matmul", {b.tensor("input"), b.tensor("vec")});
               }});
  t.push_back({"dot", TM, "input, other", [](Bound& b) {
                 return emit(b, "matmul", {b.tensor("input"), b.tensor("other")});
               }});
  t.push_back({"bmm", TM, "input, mat2", [](Bound& b) {
                 return emit(b, "bmm", {b.tensor("input"), b.tensor("mat2")});
               }});
  t.push_back(
      {"linear", kF, "input, weight, bias=None", [](Bound& b) {
         return emit(b, "linear", {b.tensor("input"), b.tensor("weight"), b.opt_tensor("bias")});
       }});
  t.push_back({"addmm", TM, "input, mat1, mat2, *, beta=1, alpha=1", [](Bound& b) {
                 Lowerer& L = b.L;
                 const Span& at = b.call.callee;
                 ir::Value* prod = L.apply1("matmul", {b.tensor("mat1"), b.tensor("mat2")}, {}, at);
                 if (b.float_("alpha") != 1)
                   prod = L.apply1("mul", {prod, b.operand("alpha")}, {}, at);
                 ir::Value* in = b.tensor("input");
                 if (b.float_("beta") != 1) in = L.apply1("mul", {in, b.operand("beta")}, {}, at);
                 return emit(b, "add", {in, prod});
               }});

  // --- convolution and pooling ---------------------------------------------------------------
  t.push_back({"conv2d", kF | kTorch,
               "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", conv2d});
  t.push_back({"max_pool2d", kF | kTorch,
               "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
               "return_indices=False",
               [](Bound& b) {
                 if (b.bool_("return_indices"))
                   b.fail("return_indices", "return_indices=True is not supported yet");
                 return emit(b, "max_pool2d", {b.tensor("input")},
                             {{"kernel_size", pair(b, "kernel_size")},
                              {"stride", as_ints(pool_stride(b))},
                              {"padding", pair(b, "padding")},
                              {"dilation", pair(b, "dilation")},
                              {"ceil_mode", b.bool_("ceil_mode")}});
               }});
  t.push_back({"avg_pool2d", kF | kTorch,
               "input, kernel_size, stride=None, padding=0, ceil_mode=False, "
               "count_include_pad=True, divisor_override=None",
               [](Bound& b) {
                 ir::Attrs attrs{{"kernel_size", pair(b, "kernel_size")},
                                 {"stride", as_ints(pool_stride(b))},
                                 {"padding", pair(b, "padding")},
                                 {"ceil_mode", b.bool_("ceil_mode")},
                                 {"count_include_pad", b.bool_("count_include_pad")}};
                 if (!b.is_none("divisor_override"))
                   attrs.set("divisor_override", b.int_("divisor_override"));
                 return emit(b, "avg_pool2d", {b.tensor("input")}, attrs);
               }});

  // --- factories -----------------------------------------------------------------------------
  t.push_back({"zeros", kTorch, "*size, dtype=None",
               [](Bound& b) { return factory(b, 0, b.dtype("dtype")); }});
  t.push_back({"empty", kTorch, "*size, dtype=None",
               [](Bound& b) { return factory(b, 0, b.dtype("dtype")); }});
  t.push_back({"ones", kTorch, "*size, dtype=None",
               [](Bound& b) { return factory(b, 1, b.dtype("dtype")); }});
  t.push_back({"full", kTorch, "size, fill_value, *, dtype=None", [](Bound& b) {
                 const Val& v = b.val("fill_value");
                 if (!v.is_number()) b.fail("fill_value", "fill_value must be a number");
                 return factory(b, v.num(), b.dtype("dtype").value_or(dtype_of_number(v)));
               }});
  t.push_back({"zeros_like", kTorch, "input, *, dtype=None",
               [](Bound& b) { return factory_like(b, 0, b.dtype("dtype")); }});
  t.push_back({"ones_like", kTorch, "input, *, dtype=None",
               [](Bound& b) { return factory_like(b, 1, b.dtype("dtype")); }});
  t.push_back({"full_like", kTorch, "input, fill_value, *, dtype=None",
               [](Bound& b) { return factory_like(b, b.float_("fill_value"), b.dtype("dtype")); }});
  t.push_back(
      {"arange", kTorch, "start, end=None, step=1, *, dtype=None", [](Bound& b) {
         Val start = b.val("start"), end = b.val("end");
         if (end.kind == Val::Kind::None) {
           end = start;
           start = Val::int_(0);
         }
         Val step = b.val("step");
         for (const Val* v : {&start, &end, &step}) {
           if (v->kind == Val::Kind::SymDim) b.L.constant(*v, b.call.callee);
           if (!v->is_number()) b.fail("arange bounds must be numbers, got " + kind_name(*v));
         }
         if (step.num() == 0) b.fail("step", "step must be nonzero");
         bool any_float = start.kind == Val::Kind::Float || end.kind == Val::Kind::Float ||
                          step.kind == Val::Kind::Float;
         DType dt = b.dtype("dtype").value_or(any_float ? default_float() : DType::I64);
         return emit(
             b, "arange", {},
             {{"start", start.num()}, {"end", end.num()}, {"step", step.num()}, {"dtype", dt}});
       }});
  t.push_back({"tensor", kTorch, "data, *, dtype=None", tensor_literal});
  t.push_back({"eye", kTorch, "n, m=None, *, dtype=None", [](Bound& b) {
                 Lowerer& L = b.L;
                 const Span& at = b.call.callee;
                 int64_t n = b.int_("n"), m = b.is_none("m") ? n : b.int_("m");
                 auto ar = [&](int64_t k, int64_t dim) {
                   ir::Value* a = L.apply1(
                       "arange", {},
                       {{"start", 0.0}, {"end", double(k)}, {"step", 1.0}, {"dtype", DType::I64}},
                       at);
                   return L.apply1("unsqueeze", {a}, {{"dim", dim}}, at);
                 };
                 ir::Value* eq = L.apply1("eq", {ar(n, 1), ar(m, 0)}, {}, at);
                 return b.L.fresh(L.cast(eq, b.dtype("dtype").value_or(default_float()), at));
               }});
  t.push_back({"tril", TM, "input, diagonal=0", [](Bound& b) { return tri(b, true); }});
  t.push_back({"triu", TM, "input, diagonal=0", [](Bound& b) { return tri(b, false); }});
}

}  // namespace kiln::frontend
