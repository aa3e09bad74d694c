// Op family: contraction — matmul, bmm and linear with torch.matmul's rank rules.
//
// Inference checks ranks, inner dims and dtypes (operands must share a dtype:
// torch does not promote for matmul) and passes symbolic dims through: batch
// dims broadcast like elementwise ops, M and N carry over. The references run
// one batched kernel over operands widened to f64 / i64 and viewed as
// batch+[M, K] and batch+[K, N] (vectors become 1-row / 1-column matrices,
// broadcast batch dims stride 0), then round once into the output dtype.
#include "ir/ops/contraction_internal.h"
#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir {
namespace {

using contraction::check_operand_types;
using contraction::describe;
using contraction::DTypeRule;
using contraction::Named;

Dims leading(const Dims& d, size_t drop) {
  return drop >= d.size() ? Dims{} : Dims(d.begin(), d.end() - static_cast<ptrdiff_t>(drop));
}

// Inner dims must be provably equal: both static and equal, or the same symbol.
void check_inner(const InferContext& ctx, const Dim& ka, const Dim& kb, const std::string& what) {
  if (ka == kb) return;
  ctx.fail("inner dims differ: " + what + " (" + ka.str() + " vs " + kb.str() + ")");
}

std::vector<Type> infer_matmul(const InferContext& ctx) {
  const TensorType& a = ctx.tensor(0);
  const TensorType& b = ctx.tensor(1);
  std::string both = describe({{"a", &a}, {"b", &b}});
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("both operands must be at least 1-D: " + both);
  check_operand_types(ctx, {{"a", &a}, {"b", &b}}, DTypeRule::FloatingOrIntegral);
  const Dim& kb = b.rank() == 1 ? b.dims[0] : b.dims[b.dims.size() - 2];
  check_inner(ctx, a.dims.back(), kb, both);
  Dims batch_a = leading(a.dims, 2), batch_b = leading(b.dims, 2);
  std::optional<Dims> batch = broadcast_dims(batch_a, batch_b);
  if (!batch) {
    ctx.fail("batch dims do not broadcast: " + both + " (" + dims_str(batch_a) + " vs " +
             dims_str(batch_b) + ")");
  }
  Dims out = *batch;
  if (a.rank() >= 2) out.push_back(a.dims[a.dims.size() - 2]);
  if (b.rank() >= 2) out.push_back(b.dims.back());
  return {Type::tensor(a.dtype, out, a.device)};
}

std::vector<Type> infer_bmm(const InferContext& ctx) {
  const TensorType& a = ctx.tensor(0);
  const TensorType& b = ctx.tensor(1);
  std::string both = describe({{"a", &a}, {"b", &b}});
  if (a.rank() != 3 || b.rank() != 3) ctx.fail("both operands must be 3-D: " + both);
  check_operand_types(ctx, {{"a", &a}, {"b", &b}}, DTypeRule::FloatingOrIntegral);
  if (!(a.dims[0] == b.dims[0])) {
    ctx.fail("batch dims differ: " + both + " (" + a.dims[0].str() + " vs " + b.dims[0].str() +
             ")");
  }
  check_inner(ctx, a.dims[2], b.dims[1], both);
  return {Type::tensor(a.dtype, {a.dims[0], a.dims[1], b.dims[2]}, a.device)};
}

std::vector<Type> infer_linear(const InferContext& ctx) {
  const TensorType& x = ctx.tensor(0);
  const TensorType& w = ctx.tensor(1);
  const TensorType* bias = ctx.inputs[2].is_none() ? nullptr : &ctx.tensor(2);
  std::string all = bias ? describe({{"x", &x}, {"weight", &w}, {"bias", bias}})
                         : describe({{"x", &x}, {"weight", &w}});
  if (x.rank() == 0) ctx.fail("input x must be at least 1-D: " + all);
  if (w.rank() != 1 && w.rank() != 2) {
    ctx.fail("weight must be 2-D [out_features, in_features] (or 1-D): " + all);
  }
  if (bias) {
    check_operand_types(ctx, {{"x", &x}, {"weight", &w}, {"bias", bias}},
                        DTypeRule::FloatingOrIntegral);
  } else {
    check_operand_types(ctx, {{"x", &x}, {"weight", &w}}, DTypeRule::FloatingOrIntegral);
  }
  const Dim& in = w.dims.back();
  if (!(x.dims.back() == in)) {
    ctx.fail("in_features differ: " + all + " (" + x.dims.back().str() + " vs " + in.str() + ")");
  }
  Dims out = leading(x.dims, 1);
  if (w.rank() == 2) out.push_back(w.dims[0]);
  if (bias) {
    // The bias is added to the product, so it must broadcast to the output
    // shape without growing it (torch's addmm rule).
    std::optional<Dims> b = broadcast_dims(out, bias->dims);
    if (!b || !(*b == out)) {
      ctx.fail("bias does not broadcast to the output " + dims_str(out) + ": " + all);
    }
  }
  return {Type::tensor(x.dtype, out, x.device)};
}

// out[batch, m, n] = sum_k a[batch, m, k] * b[batch, k, n] for wide (f64 or i64)
// views a: batch+[M, K] and b: batch+[K, N] of any strides, into a fresh
// contiguous batch+[M, N] tensor of the same wide dtype. Integer products wrap
// modulo 2^64 (unsigned arithmetic), which equals wrapping in the output width.
template <typename T, typename Acc>
void batched_product_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t r = a.dim();
  const int64_t M = a.size(r - 2), K = a.size(r - 1), N = b.size(r - 1);
  const int64_t sam = a.stride(r - 2), sak = a.stride(r - 1);
  const int64_t sbk = b.stride(r - 2), sbn = b.stride(r - 1);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  Shape batch(a.sizes().begin(), a.sizes().end() - 2);
  int64_t tile = 0;
  for_each_index(batch, [&](std::span<const int64_t> idx) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      oa += idx[d] * a.stride(static_cast<int64_t>(d));
      ob += idx[d] * b.stride(static_cast<int64_t>(d));
    }
    T* o = po + tile * M * N;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        Acc acc = 0;
        const T* ra = pa + oa + m * sam;
        const T* cb = pb + ob + n * sbn;
        for (int64_t k = 0; k < K; ++k) {
          acc += static_cast<Acc>(ra[k * sak]) * static_cast<Acc>(cb[k * sbk]);
        }
        o[m * N + n] = static_cast<T>(acc);
      }
    }
    ++tile;
  });
}

Tensor batched_product(const Tensor& a, const Tensor& b) {
  Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
  out_shape.push_back(b.size(-1));
  Tensor out = Tensor::empty(out_shape, a.dtype());
  if (a.dtype() == DType::F64) {
    batched_product_typed<double, double>(a, b, out);
  } else {
    batched_product_typed<int64_t, uint64_t>(a, b, out);
  }
  return out;
}

Shape concat(const Shape& a, std::initializer_list<int64_t> b) {
  Shape s = a;
  s.insert(s.end(), b);
  return s;
}

// a[..., M, K] (a 1-D a is one row) times b[..., K, N] (a 1-D b is one column;
// `b_transposed` reads a 2-D b as [N, K], for linear's weight), with broadcast
// batch dims; returns the wide batch+[M, N] product.
Tensor contract(const Tensor& a_in, const Tensor& b_in, bool b_transposed) {
  Tensor a = contraction::widen(a_in);
  Tensor b = contraction::widen(b_in);
  if (a.dim() == 1) a = a.view_as_strided({1, a.size(0)}, {0, a.stride(0)}, a.storage_offset());
  if (b.dim() == 1) {
    b = b.view_as_strided({b.size(0), 1}, {b.stride(0), 0}, b.storage_offset());
  } else if (b_transposed) {
    b = b.view_as_strided({b.size(1), b.size(0)}, {b.stride(1), b.stride(0)}, b.storage_offset());
  }
  KILN_INTERNAL_CHECK(a.size(-1) == b.size(-2), "contract: inner dims " << shape_str(a.sizes())
                                                                        << " vs "
                                                                        << shape_str(b.sizes()));
  Shape batch_a(a.sizes().begin(), a.sizes().end() - 2);
  Shape batch_b(b.sizes().begin(), b.sizes().end() - 2);
  std::optional<Dims> batch_dims =
      broadcast_dims(dims_from_shape(batch_a), dims_from_shape(batch_b));
  KILN_INTERNAL_CHECK(batch_dims.has_value(), "contract: batch dims do not broadcast");
  Shape batch = static_shape(*batch_dims);
  a = broadcast_to(a, concat(batch, {a.size(-2), a.size(-1)}));
  b = broadcast_to(b, concat(batch, {b.size(-2), b.size(-1)}));
  return batched_product(a, b);
}

// The wide product `wide` (contiguous batch+[M, N]) reshaped to the output type
// and rounded into its dtype. Dropping a vector operand's unit M or N leaves
// the row-major layout as it is, so a reshape suffices.
Tensor finish(const RefContext& ctx, const Tensor& wide) {
  Shape out = static_shape(ctx.output_types[0].dims());
  KILN_INTERNAL_CHECK(shape_numel(out) == wide.numel(),
                      ctx.op.name << ": inferred output " << shape_str(out)
                                  << " does not hold the product " << shape_str(wide.sizes()));
  Tensor shaped = wide.view_as_strided(out, contiguous_strides(out), wide.storage_offset());
  return shaped.to(ctx.output_types[0].dtype());
}

std::vector<Tensor> ref_matmul(const RefContext& ctx) {
  return {finish(ctx, contract(ctx.inputs[0], ctx.inputs[1], false))};
}

std::vector<Tensor> ref_linear(const RefContext& ctx) {
  Tensor wide = contract(ctx.inputs[0], ctx.inputs[1], true);
  const Tensor& bias = ctx.inputs[2];
  if (bias.defined()) {
    Tensor flat_out = wide.view_as_strided(
        {wide.numel()}, {1}, wide.storage_offset());  // contiguous, row-major over the output
    Shape out = static_shape(ctx.output_types[0].dims());
    KILN_INTERNAL_CHECK(shape_numel(out) == wide.numel(), "linear: output size");
    Tensor bb = broadcast_to(contraction::widen(bias), out);
    bool floating = wide.dtype() == DType::F64;
    int64_t i = 0;
    for_each_index(out, [&](std::span<const int64_t> idx) {
      std::vector<int64_t> at{i++};
      if (floating) {
        flat_out.set(at, flat_out.get(at) + bb.get(idx));
      } else {
        uint64_t sum =
            static_cast<uint64_t>(flat_out.get_int(at)) + static_cast<uint64_t>(bb.get_int(idx));
        flat_out.set_int(at, static_cast<int64_t>(sum));
      }
    });
  }
  return {finish(ctx, wide)};
}

}  // namespace

void register_contraction_ops(OpRegistry& r) {
  r.add(OpDef{
      .name = "matmul",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .category = OpCategory::Contraction,
      .doc = "Matrix product with torch.matmul's rank rules (vectors, broadcast batch dims).",
      .infer = infer_matmul,
      .reference = ref_matmul,
  });
  r.add(OpDef{
      .name = "bmm",
      .operands = {{"a"}, {"b"}},
      .attrs = {},
      .category = OpCategory::Contraction,
      .doc = "Batched matrix product of [B, M, K] and [B, K, N] (no broadcasting).",
      .infer = infer_bmm,
      .reference = ref_matmul,
  });
  r.add(OpDef{
      .name = "linear",
      .operands = {{"x"}, {"weight"}, {"bias", OperandKind::OptionalTensor}},
      .attrs = {},
      .category = OpCategory::Contraction,
      .doc = "x[..., in] times weight[out, in] transposed, plus an optional bias[out].",
      .infer = infer_linear,
      .reference = ref_linear,
  });
}

}  // namespace kiln::ir
