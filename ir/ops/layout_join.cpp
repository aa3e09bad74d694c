// Layout ops that join tensors or cut one into pieces: cat, stack, split, chunk.
// PyTorch semantics: cat and stack promote dtypes across their inputs (like
// torch.cat), cat skips 1-D pieces of shape [0] (torch's legacy rule), split and
// chunk give one output per piece with the last piece possibly smaller.
//
// The number of outputs of split and chunk is part of the graph, so it must
// follow from the attributes and a static split dim; a symbolic one fails.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/ops/layout_internal.h"

namespace kiln::ir::layout {

namespace {

using std::to_string;

// Keeps a typo'd chunk count on an empty dim from asking for billions of outputs.
constexpr int64_t kMaxPieces = int64_t{1} << 16;

std::string piece_str(size_t i, const Dims& dims) {
  return "piece " + to_string(i) + " of shape " + dims_str(dims);
}

// torch.cat ignores 1-D empty pieces whatever the other pieces' rank.
bool legacy_empty(const Dims& dims) {
  return dims.size() == 1 && dims[0].is_static() && dims[0].value == 0;
}
bool legacy_empty(const Tensor& t) {
  return t.dim() == 1 && t.size(0) == 0;
}

// ---- cat / stack ------------------------------------------------------------------------------

std::vector<Type> infer_cat(const InferContext& ctx) {
  const DType dtype = result_type(ctx.inputs);
  std::vector<const TensorType*> pieces;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    pieces.push_back(&ctx.tensor(i));
    if (pieces.back()->rank() == 0) {
      ctx.fail(piece_str(i, pieces.back()->dims) + " is 0-dim; 0-dim tensors cannot be joined");
    }
    if (pieces.back()->device != pieces.front()->device) {
      ctx.fail(piece_str(i, pieces.back()->dims) + " is on " + pieces.back()->device.str() +
               " but piece 0 is on " + pieces.front()->device.str());
    }
  }
  size_t first = 0;
  while (first < pieces.size() && legacy_empty(pieces[first]->dims)) ++first;
  if (first == pieces.size()) return {Type::tensor(dtype, {Dim(0)}, pieces[0]->device)};

  const TensorType& ref = *pieces[first];
  const std::string what = "tensors[" + to_string(first) + "]";
  const int64_t d = check_dim(ctx, ctx.attrs.get_int("dim"), ref.dims, what.c_str());
  int64_t total = 0, num_symbolic = 0;
  Dim symbolic;
  for (size_t i = first; i < pieces.size(); ++i) {
    const Dims& dims = pieces[i]->dims;
    if (legacy_empty(dims)) continue;
    if (dims.size() != ref.dims.size()) {
      ctx.fail(piece_str(i, dims) + " has rank " + to_string(dims.size()) + " but " +
               piece_str(first, ref.dims) + " has rank " + to_string(ref.rank()));
    }
    for (size_t j = 0; j < dims.size(); ++j) {
      if (static_cast<int64_t>(j) == d) continue;
      if (!(dims[j] == ref.dims[j])) {
        ctx.fail(piece_str(i, dims) + " does not match " + piece_str(first, ref.dims) + " in dim " +
                 to_string(j) + " (joining along dim " + to_string(d) + ")");
      }
    }
    const Dim& cd = dims[static_cast<size_t>(d)];
    if (!cd.is_static()) {
      ++num_symbolic;
      symbolic = cd;
    } else if (__builtin_add_overflow(total, cd.value, &total)) {
      ctx.fail("the pieces' sizes along dim " + to_string(d) + " overflow int64");
    }
  }
  Dims out = ref.dims;
  out[static_cast<size_t>(d)] = Dim(total);
  if (num_symbolic > 0) {
    // Only N + 0 + 0 is spellable as a Dim.
    if (num_symbolic > 1 || total != 0) {
      ctx.fail("cannot add symbolic sizes along dim " + to_string(d) +
               ": only one piece may have a symbolic size there, with the others empty (" +
               piece_str(first, ref.dims) + ")");
    }
    out[static_cast<size_t>(d)] = symbolic;
  }
  return {Type::tensor(dtype, std::move(out), ref.device)};
}

std::vector<Tensor> ref_cat(const RefContext& ctx) {
  Tensor out = alloc_output(ctx, 0);
  if (out.numel() == 0) return {out};
  size_t first = 0;
  while (legacy_empty(ctx.inputs[first])) ++first;
  const auto d = static_cast<size_t>(wrap(ctx.attrs.get_int("dim"), ctx.inputs[first].dim()));
  int64_t at = 0;  // where the next piece starts along d
  for (const Tensor& piece : ctx.inputs) {
    if (legacy_empty(piece)) continue;
    View dst{piece.sizes(), out.strides(), at * out.strides()[d]};
    copy_view(piece, whole(piece), out, dst);
    at += piece.sizes()[d];
  }
  return {out};
}

std::vector<Type> infer_stack(const InferContext& ctx) {
  const DType dtype = result_type(ctx.inputs);
  const TensorType& ref = ctx.tensor(0);
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    const TensorType& t = ctx.tensor(i);
    if (!(t.dims == ref.dims)) {
      ctx.fail(piece_str(i, t.dims) + " does not match " + piece_str(0, ref.dims) +
               " (stack needs equal shapes)");
    }
    if (t.device != ref.device) {
      ctx.fail(piece_str(i, t.dims) + " is on " + t.device.str() + " but piece 0 is on " +
               ref.device.str());
    }
  }
  const int64_t dim = ctx.attrs.get_int("dim");
  const int64_t r = ref.rank() + 1;  // the new dim may go after the last one
  if (dim < -r || dim >= r) {
    ctx.fail("dim " + to_string(dim) + " is out of range [" + to_string(-r) + ", " +
             to_string(r - 1) + "] for " + piece_str(0, ref.dims));
  }
  const int64_t d = normalize_dim(ctx, dim, r);
  Dims out = ref.dims;
  out.insert(out.begin() + d, Dim(static_cast<int64_t>(ctx.inputs.size())));
  return {Type::tensor(dtype, std::move(out), ref.device)};
}

std::vector<Tensor> ref_stack(const RefContext& ctx) {
  Tensor out = alloc_output(ctx, 0);
  const auto d = wrap(ctx.attrs.get_int("dim"), out.dim());
  Shape strides = out.strides();
  const int64_t step = strides[static_cast<size_t>(d)];
  strides.erase(strides.begin() + d);  // piece i fills out[..., i, ...] along d
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& piece = ctx.inputs[i];
    copy_view(piece, whole(piece), out,
              View{piece.sizes(), strides, static_cast<int64_t>(i) * step});
  }
  return {out};
}

// ---- split / chunk ------------------------------------------------------------------------------

// Validates that x can be cut along `dim` and returns {normalized dim, its size}.
std::pair<int64_t, int64_t> split_dim(const InferContext& ctx, const TensorType& x) {
  if (x.rank() == 0) ctx.fail("cannot split 0-dim " + operand_str("x", x.dims));
  const int64_t d = check_dim(ctx, ctx.attrs.get_int("dim"), x.dims, "x");
  const Dim& size = x.dims[static_cast<size_t>(d)];
  if (!size.is_static()) {
    ctx.fail("dim " + to_string(d) + " of " + operand_str("x", x.dims) + " is symbolic (" +
             size.symbol + "); the number of pieces must be known at compile time");
  }
  return {d, size.value};
}

// Pieces of `split_size` along a dim of `n`, the last one smaller; at least one.
std::vector<int64_t> even_pieces(int64_t n, int64_t split_size) {
  const int64_t count = (split_size == 0 || n == 0) ? 1 : (n - 1) / split_size + 1;
  std::vector<int64_t> sizes(static_cast<size_t>(count), split_size);
  sizes.back() = n - split_size * (count - 1);
  return sizes;
}

std::vector<Type> piece_types(const InferContext& ctx, const TensorType& x, int64_t d,
                              const std::vector<int64_t>& sizes) {
  std::vector<Type> out;
  for (int64_t s : sizes) {
    Dims dims = x.dims;
    dims[static_cast<size_t>(d)] = Dim(s);
    out.push_back(like(x, std::move(dims)));
  }
  return out;
}

void check_count(const InferContext& ctx, int64_t count, const TensorType& x) {
  if (count > kMaxPieces) {
    ctx.fail("would make " + to_string(count) + " pieces of " + operand_str("x", x.dims) +
             "; at most " + to_string(kMaxPieces) + " are supported");
  }
}

std::vector<Type> infer_split(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const bool has_size = !ctx.attrs.is_none("split_size");
  const bool has_sizes = !ctx.attrs.is_none("sizes");
  if (has_size == has_sizes) {
    ctx.fail(std::string("give exactly one of split_size and sizes, got ") +
             (has_size ? "both" : "neither"));
  }
  const auto [d, n] = split_dim(ctx, x);
  const std::string where = "dim " + to_string(d) + " of " + operand_str("x", x.dims);
  if (has_size) {
    const int64_t s = ctx.attrs.get_int("split_size");
    if (s < 0) ctx.fail("split_size must be >= 0, got " + to_string(s));
    if (s == 0 && n != 0) {
      ctx.fail("split_size 0 only splits an empty dim, but " + where + " has size " + to_string(n));
    }
    if (s > 0 && n > 0) check_count(ctx, (n - 1) / s + 1, x);
    return piece_types(ctx, x, d, even_pieces(n, s));
  }
  const std::vector<int64_t> sizes = ctx.attrs.get_ints("sizes");
  if (sizes.empty()) ctx.fail("sizes must not be empty (" + where + ")");
  check_count(ctx, static_cast<int64_t>(sizes.size()), x);
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("sizes " + ints_str(sizes) + " has a negative entry " + to_string(s));
    if (__builtin_add_overflow(sum, s, &sum)) {
      ctx.fail("sizes " + ints_str(sizes) + " overflow int64");
    }
  }
  if (sum != n) {
    ctx.fail("sizes " + ints_str(sizes) + " sum to " + to_string(sum) + " but " + where +
             " has size " + to_string(n));
  }
  return piece_types(ctx, x, d, sizes);
}

std::vector<Type> infer_chunk(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const int64_t chunks = ctx.attrs.get_int("chunks");
  if (chunks <= 0) {
    ctx.fail("chunks must be > 0, got " + to_string(chunks) + " (" + operand_str("x", x.dims) +
             ")");
  }
  const auto [d, n] = split_dim(ctx, x);
  if (n == 0) {
    // An empty dim cannot say how many pieces it held, so torch keeps all `chunks`.
    check_count(ctx, chunks, x);
    return piece_types(ctx, x, d, std::vector<int64_t>(static_cast<size_t>(chunks), 0));
  }
  // torch's rule: pieces of ceil(n / chunks), which may make fewer than `chunks`.
  return piece_types(ctx, x, d, even_pieces(n, (n - 1) / chunks + 1));
}

// Each output i is the next run of its own size along the split dim.
std::vector<Tensor> ref_pieces(const RefContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const auto d = static_cast<size_t>(wrap(ctx.attrs.get_int("dim"), x.dim()));
  std::vector<Tensor> outs;
  int64_t at = 0;
  for (size_t i = 0; i < ctx.output_types.size(); ++i) {
    View v = whole(x);
    v.sizes[d] = ctx.output_types[i].dims()[d].value;
    v.offset = at * v.strides[d];
    at += v.sizes[d];
    outs.push_back(materialize(ctx, i, x, v));
  }
  return outs;
}

}  // namespace

void register_layout_join_ops(OpRegistry& r) {
  const OperandSpec tensors{"tensors", OperandKind::Tensor, true};
  const OperandSpec x{"x", OperandKind::Tensor, false};
  r.add(OpDef{"cat",
              {tensors},
              {{"dim", AttrKind::Int, AttrValue(int64_t{0}), false}},
              OpCategory::Layout,
              "the tensors joined along an existing dim, dtypes promoted; 1-D empty pieces skipped",
              infer_cat,
              ref_cat});
  r.add(OpDef{"stack",
              {tensors},
              {{"dim", AttrKind::Int, AttrValue(int64_t{0}), false}},
              OpCategory::Layout,
              "equal-shape tensors joined along a new dim, dtypes promoted",
              infer_stack,
              ref_stack});
  r.add(OpDef{"split",
              {x},
              {{"split_size", AttrKind::Int, AttrValue(NoneAttr{}), true},
               {"sizes", AttrKind::Ints, AttrValue(NoneAttr{}), true},
               {"dim", AttrKind::Int, AttrValue(int64_t{0}), false}},
              OpCategory::Layout,
              "x cut along dim into pieces of split_size (last smaller) or of the given sizes",
              infer_split,
              ref_pieces});
  r.add(OpDef{"chunk",
              {x},
              {{"chunks", AttrKind::Int, std::nullopt, false},
               {"dim", AttrKind::Int, AttrValue(int64_t{0}), false}},
              OpCategory::Layout,
              "x cut along dim into pieces of ceil(size / chunks), so maybe fewer than chunks",
              infer_chunk,
              ref_pieces});
}

}  // namespace kiln::ir::layout
