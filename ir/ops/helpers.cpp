// Helpers shared by the op families: broadcasting, dim normalization,
// PyTorch's result_type, broadcast views and index iteration.
#include <algorithm>

#include "ir/ops/ops.h"
#include "kiln/error.h"

namespace kiln::ir {

std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right; a missing dim acts as 1.
    const Dim* da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim* db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    auto is_one = [](const Dim* d) { return !d || (d->is_static() && d->value == 1); };
    if (is_one(da)) {
      out[i] = db ? *db : Dim(1);
    } else if (is_one(db)) {
      out[i] = *da;
    } else if (*da == *db) {
      out[i] = *da;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

int64_t normalize_dim(const InferContext& ctx, int64_t dim, int64_t rank) {
  // A 0-dim tensor accepts dim 0 and -1, as in PyTorch.
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    ctx.fail("dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
             std::to_string(rank) + " (expected [" + std::to_string(-r) + ", " +
             std::to_string(r - 1) + "])");
  }
  return dim < 0 ? dim + r : dim;
}

namespace {
enum class Category { None, Bool, Integral, Floating };
Category category_of(DType t) {
  if (t == DType::Bool) return Category::Bool;
  return is_floating(t) ? Category::Floating : Category::Integral;
}
}  // namespace

DType result_type(std::span<const Type> operands) {
  // Three priority groups: dimensioned tensors, 0-dim tensors, scalars.
  std::optional<DType> dim_t, zero_t, scalar_t;
  auto merge = [](std::optional<DType>& acc, DType t) { acc = acc ? promote_types(*acc, t) : t; };
  for (const Type& t : operands) {
    if (t.is_tensor()) {
      merge(t.rank() > 0 ? dim_t : zero_t, t.dtype());
    } else if (t.is_scalar()) {
      // Wrapped numbers: int -> i64, float -> default float (f32), bool -> bool.
      DType d = t.kind() == TypeKind::Float ? DType::F32
                : t.kind() == TypeKind::Int ? DType::I64
                                            : DType::Bool;
      merge(scalar_t, d);
    }
  }
  std::optional<DType> result = dim_t;
  for (const std::optional<DType>& lower : {zero_t, scalar_t}) {
    if (!lower) continue;
    if (!result) {
      result = lower;
    } else if (category_of(*lower) > category_of(*result)) {
      // A lower-priority group only counts when it lifts the category, and
      // then with its own (default) dtype.
      result = lower;
    }
  }
  KILN_INTERNAL_CHECK(result.has_value(), "result_type of no operands");
  return *result;
}

Tensor broadcast_to(const Tensor& t, const Shape& sizes) {
  int64_t n = int64_t(sizes.size());
  KILN_INTERNAL_CHECK(t.dim() <= n, "broadcast_to: rank " << t.dim() << " > " << n);
  Shape strides(sizes.size(), 0);
  for (int64_t i = 0; i < t.dim(); ++i) {
    int64_t o = n - t.dim() + i;
    int64_t s = t.size(i);
    KILN_INTERNAL_CHECK(s == sizes[o] || s == 1,
                        "broadcast_to: " << shape_str(t.sizes()) << " to " << shape_str(sizes));
    strides[o] = s == 1 && sizes[o] != 1 ? 0 : t.stride(i);
  }
  return t.view_as_strided(sizes, strides, t.storage_offset());
}

void for_each_index(const Shape& sizes,
                    const std::function<void(std::span<const int64_t>)>& f) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    f(idx);
    int64_t d = int64_t(sizes.size()) - 1;
    while (d >= 0) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      --d;
    }
    if (d < 0) return;
  }
}

}  // namespace kiln::ir
