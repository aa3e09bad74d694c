// Layout ops that rearrange one tensor without picking elements out of it:
// reshape, permute, transpose, expand, squeeze, unsqueeze, flatten, contiguous,
// copy. PyTorch semantics; `view` is the frontend's spelling of reshape.
//
// Symbolic dims pass through where a dim moves unchanged; where an op would
// have to combine a symbol with other sizes (N*4) it fails, since Dims cannot
// spell a product.
#include <string>
#include <vector>

#include "ir/ops/layout_internal.h"

namespace kiln::ir::layout {

namespace {

using std::to_string;

// ---- reshape ---------------------------------------------------------------------------

std::vector<Type> infer_reshape(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const std::vector<int64_t> shape = ctx.attrs.get_ints("shape");
  const std::string shape_s = ints_str(shape);
  int64_t infer_at = -1;
  int64_t known = 1;  // product of the entries other than -1
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[i];
    if (s == -1) {
      if (infer_at >= 0) {
        ctx.fail("shape " + shape_s + " has more than one -1; only one dim can be inferred");
      }
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (s < 0) {
      ctx.fail("invalid size " + to_string(s) + " in shape " + shape_s +
               " (sizes are >= 0, or -1 to infer one)");
    }
    if (__builtin_mul_overflow(known, s, &known)) {
      ctx.fail("shape " + shape_s + " has more elements than int64 can count");
    }
  }

  int64_t numel = 1;  // of the input's static dims
  int64_t num_symbolic = 0;
  std::string symbol;
  for (const Dim& d : x.dims) {
    if (!d.is_static()) {
      ++num_symbolic;
      symbol = d.symbol;
    } else if (__builtin_mul_overflow(numel, d.value, &numel)) {
      ctx.fail(operand_str("x", x.dims) + " has more elements than int64 can count");
    }
  }

  Dims out;
  for (int64_t s : shape) out.emplace_back(s);
  if (num_symbolic > 0) {
    // The one case kept: a lone symbol whose static companions cancel exactly
    // against the static entries, so the -1 entry is the symbol itself.
    if (num_symbolic != 1 || infer_at < 0 || known == 0 || numel != known) {
      ctx.fail("symbolic dims not supported here: " + operand_str("x", x.dims) + " to shape " +
               shape_s + " (only a single symbolic dim that ends up alone at the -1 entry)");
    }
    out[static_cast<size_t>(infer_at)] = Dim::sym(symbol);
    return {like(x, std::move(out))};
  }

  const std::string counts = operand_str("x", x.dims) + " (" + to_string(numel) + " elements)";
  if (infer_at < 0) {
    if (known != numel) {
      ctx.fail("shape " + shape_s + " (" + to_string(known) + " elements) does not match " +
               counts);
    }
    return {like(x, std::move(out))};
  }
  if (known == 0) {
    if (numel == 0) {
      ctx.fail("cannot infer the -1 in shape " + shape_s + " for " + counts +
               ": with a 0 among the other sizes it could be anything");
    }
    ctx.fail("shape " + shape_s + " (0 elements) does not match " + counts);
  }
  if (numel % known != 0) {
    ctx.fail("shape " + shape_s + " (a multiple of " + to_string(known) +
             " elements) does not match " + counts);
  }
  out[static_cast<size_t>(infer_at)] = Dim(numel / known);
  return {like(x, std::move(out))};
}

// Every op here whose output keeps the input's row-major element order.
std::vector<Tensor> ref_packed_copy(const RefContext& ctx) {
  return {materialize(ctx, 0, ctx.inputs[0], whole(ctx.inputs[0]))};
}

// ---- permute / transpose -----------------------------------------------------------------

std::vector<Type> infer_permute(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const std::vector<int64_t> dims = ctx.attrs.get_ints("dims");
  if (static_cast<int64_t>(dims.size()) != x.rank()) {
    ctx.fail("dims " + ints_str(dims) + " has " + to_string(dims.size()) + " entries but " +
             operand_str("x", x.dims) + " has rank " + to_string(x.rank()));
  }
  std::vector<bool> seen(dims.size(), false);
  Dims out;
  for (int64_t d : dims) {
    const int64_t nd = check_dim(ctx, d, x.dims, "x");
    if (seen[static_cast<size_t>(nd)]) {
      ctx.fail("dims " + ints_str(dims) + " is not a permutation: dim " + to_string(nd) +
               " appears twice (" + operand_str("x", x.dims) + ")");
    }
    seen[static_cast<size_t>(nd)] = true;
    out.push_back(x.dims[static_cast<size_t>(nd)]);
  }
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_permute(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  View v;
  for (int64_t d : ctx.attrs.get_ints("dims")) {
    const int64_t nd = wrap(d, x.dim());
    v.sizes.push_back(x.size(nd));
    v.strides.push_back(x.stride(nd));
  }
  return {materialize(ctx, 0, x, v)};
}

std::vector<Type> infer_transpose(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const int64_t d0 = check_dim(ctx, ctx.attrs.get_int("dim0"), x.dims, "x", true);
  const int64_t d1 = check_dim(ctx, ctx.attrs.get_int("dim1"), x.dims, "x", true);
  Dims out = x.dims;
  if (x.rank() > 0) std::swap(out[static_cast<size_t>(d0)], out[static_cast<size_t>(d1)]);
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_transpose(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  View v = whole(x);
  if (x.dim() > 0) {
    const auto d0 = static_cast<size_t>(wrap(ctx.attrs.get_int("dim0"), x.dim()));
    const auto d1 = static_cast<size_t>(wrap(ctx.attrs.get_int("dim1"), x.dim()));
    std::swap(v.sizes[d0], v.sizes[d1]);
    std::swap(v.strides[d0], v.strides[d1]);
  }
  return {materialize(ctx, 0, x, v)};
}

// ---- expand ------------------------------------------------------------------------------

std::vector<Type> infer_expand(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const std::vector<int64_t> size = ctx.attrs.get_ints("size");
  const std::string size_s = ints_str(size);
  const auto n = static_cast<int64_t>(size.size());
  if (n < x.rank()) {
    ctx.fail("size " + size_s + " has " + to_string(n) + " entries, fewer than the rank " +
             to_string(x.rank()) + " of " + operand_str("x", x.dims));
  }
  const int64_t lead = n - x.rank();
  Dims out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = size[static_cast<size_t>(i)];
    if (i < lead) {
      if (s < 0) {
        ctx.fail("size " + size_s + ": new leading dim " + to_string(i) + " cannot be " +
                 to_string(s) + " (-1 only keeps an existing dim of " + operand_str("x", x.dims) +
                 ")");
      }
      out.emplace_back(s);
      continue;
    }
    const int64_t j = i - lead;
    const Dim& in = x.dims[static_cast<size_t>(j)];
    if (s == -1) {
      out.push_back(in);
    } else if (s < 0) {
      ctx.fail("invalid size " + to_string(s) + " in size " + size_s +
               " (sizes are >= 0, or -1 to keep a dim)");
    } else if (!in.is_static()) {
      // N may or may not be 1 at run time; refusing beats guessing.
      ctx.fail("dim " + to_string(j) + " of " + operand_str("x", x.dims) + " is symbolic (" +
               in.symbol + "); use -1 in size " + size_s + " to keep it");
    } else if (in.value == s || in.value == 1) {
      out.emplace_back(s);
    } else {
      ctx.fail("dim " + to_string(j) + " of " + operand_str("x", x.dims) + " has size " +
               to_string(in.value) + " and cannot expand to " + to_string(s) +
               " (only size-1 dims expand)");
    }
  }
  return {like(x, std::move(out))};
}

std::vector<Tensor> ref_expand(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Shape out = static_shape(ctx.output_types[0].dims());
  const auto lead = static_cast<int64_t>(out.size()) - x.dim();
  View v{out, Shape(out.size(), 0), 0};
  for (int64_t j = 0; j < x.dim(); ++j) {
    // A size-1 dim stretched to another size re-reads its one element.
    const bool stretched = x.size(j) == 1 && out[static_cast<size_t>(j + lead)] != 1;
    v.strides[static_cast<size_t>(j + lead)] = stretched ? 0 : x.stride(j);
  }
  return {materialize(ctx, 0, x, v)};
}

// ---- squeeze / unsqueeze / flatten -----------------------------------------------------------

std::vector<Type> infer_squeeze(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const std::vector<int64_t> dims = ctx.attrs.get_ints("dim");
  std::vector<bool> listed(x.dims.size(), dims.empty());
  std::vector<bool> seen(std::max<size_t>(x.dims.size(), 1), false);
  for (int64_t d : dims) {
    const int64_t nd = check_dim(ctx, d, x.dims, "x", true);
    if (seen[static_cast<size_t>(nd)]) {
      ctx.fail("dim " + to_string(nd) + " appears twice in dim " + ints_str(dims) + " (" +
               operand_str("x", x.dims) + ")");
    }
    seen[static_cast<size_t>(nd)] = true;
    if (x.rank() > 0) listed[static_cast<size_t>(nd)] = true;
  }
  Dims out;
  for (size_t j = 0; j < x.dims.size(); ++j) {
    const Dim& d = x.dims[j];
    if (!d.is_static() && listed[j] && !dims.empty()) {
      ctx.fail("dim " + to_string(j) + " of " + operand_str("x", x.dims) + " is symbolic (" +
               d.symbol + "); squeeze cannot tell whether it is 1");
    }
    // Squeezing all dims keeps symbolic ones: they count as "not known to be 1".
    if (listed[j] && d.is_static() && d.value == 1) continue;
    out.push_back(d);
  }
  return {like(x, std::move(out))};
}

std::vector<Type> infer_unsqueeze(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const int64_t d = ctx.attrs.get_int("dim");
  const int64_t r = x.rank() + 1;  // the new dim may go after the last one
  if (d < -r || d >= r) {
    ctx.fail("dim " + to_string(d) + " is out of range [" + to_string(-r) + ", " +
             to_string(r - 1) + "] for " + operand_str("x", x.dims));
  }
  const int64_t nd = normalize_dim(ctx, d, r);
  Dims out = x.dims;
  out.insert(out.begin() + nd, Dim(1));
  return {like(x, std::move(out))};
}

std::vector<Type> infer_flatten(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const int64_t start = check_dim(ctx, ctx.attrs.get_int("start_dim"), x.dims, "x", true);
  const int64_t end = check_dim(ctx, ctx.attrs.get_int("end_dim"), x.dims, "x", true);
  if (start > end) {
    ctx.fail("start_dim " + to_string(start) + " comes after end_dim " + to_string(end) + " for " +
             operand_str("x", x.dims));
  }
  if (x.rank() == 0) return {like(x, {Dim(1)})};
  int64_t prod = 1, num_symbolic = 0;
  Dim symbolic;
  for (int64_t j = start; j <= end; ++j) {
    const Dim& d = x.dims[static_cast<size_t>(j)];
    if (!d.is_static()) {
      ++num_symbolic;
      symbolic = d;
    } else if (__builtin_mul_overflow(prod, d.value, &prod)) {
      ctx.fail(operand_str("x", x.dims) + " has more elements than int64 can count");
    }
  }
  Dim merged(prod);
  if (num_symbolic > 0) {
    if (num_symbolic > 1 || prod != 1) {
      ctx.fail("cannot flatten dims " + to_string(start) + ".." + to_string(end) + " of " +
               operand_str("x", x.dims) + ": a symbolic dim only flattens with dims of size 1");
    }
    merged = symbolic;
  }
  Dims out(x.dims.begin(), x.dims.begin() + start);
  out.push_back(merged);
  out.insert(out.end(), x.dims.begin() + end + 1, x.dims.end());
  return {like(x, std::move(out))};
}

std::vector<Type> infer_same(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  return {like(x, x.dims)};
}

void add(OpRegistry& r, const char* name, std::vector<AttrSpec> attrs, const char* doc,
         InferFn infer, ReferenceFn ref) {
  r.add(OpDef{name,
              {{"x", OperandKind::Tensor, false}},
              std::move(attrs),
              OpCategory::Layout,
              doc,
              std::move(infer),
              std::move(ref)});
}

}  // namespace

void register_layout_view_ops(OpRegistry& r) {
  using Ints = std::vector<int64_t>;
  add(r, "reshape", {{"shape", AttrKind::Ints, std::nullopt, false}},
      "x with the given shape, same row-major elements; one -1 entry is inferred", infer_reshape,
      ref_packed_copy);
  add(r, "permute", {{"dims", AttrKind::Ints, std::nullopt, false}},
      "x with its dims reordered: output dim i is input dim dims[i]", infer_permute, ref_permute);
  add(r, "transpose",
      {{"dim0", AttrKind::Int, std::nullopt, false}, {"dim1", AttrKind::Int, std::nullopt, false}},
      "x with dims dim0 and dim1 swapped", infer_transpose, ref_transpose);
  add(r, "expand", {{"size", AttrKind::Ints, std::nullopt, false}},
      "x broadcast to size: size-1 dims repeat, -1 keeps a dim, new dims lead", infer_expand,
      ref_expand);
  add(r, "squeeze", {{"dim", AttrKind::Ints, AttrValue(Ints{}), false}},
      "x without the listed size-1 dims (all size-1 dims when dim is empty)", infer_squeeze,
      ref_packed_copy);
  add(r, "unsqueeze", {{"dim", AttrKind::Int, std::nullopt, false}},
      "x with a new size-1 dim inserted at dim", infer_unsqueeze, ref_packed_copy);
  add(r, "flatten",
      {{"start_dim", AttrKind::Int, AttrValue(int64_t{0}), false},
       {"end_dim", AttrKind::Int, AttrValue(int64_t{-1}), false}},
      "x with dims start_dim..end_dim merged into one (a 0-dim x becomes [1])", infer_flatten,
      ref_packed_copy);
  add(r, "contiguous", {}, "x with packed row-major strides (a no-op or a copy)", infer_same,
      ref_packed_copy);
  add(r, "copy", {}, "a fresh copy of x (torch.clone)", infer_same, ref_packed_copy);
}

}  // namespace kiln::ir::layout
