// Lowerings of flip, diagonal and unfold (ir/ops/layout_stride.cpp) as index
// remappings, like the other layout ops: inside a fused group each is pure
// indexing into its producer, alone it is one copy loop.
//   flip:     in[d] = size_d - 1 - out[d] for each flipped d
//   diagonal: in[dim1] = k + max(0, -offset), in[dim2] = k + max(0, offset),
//             k the last output index; the other dims keep their order
//   unfold:   in[d] = out[d] * step + out[last]
#include <algorithm>
#include <set>

#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

std::vector<Operand> remap(NodeLowering& n, std::function<Index(const Index&)> f) {
  Operand x = n.in(0);
  return {tensor_operand(
      x.dtype, n.out_dims(), [x, f](const Index& idx) { return x.at(f(idx)); }, n.out_type())};
}

std::vector<Operand> lower_flip(NodeLowering& n) {
  const Operand& x = n.in(0);
  std::set<size_t> dims;
  if (x.rank() > 0) {
    for (int64_t d : n.attrs().get_ints("dims")) dims.insert(size_t(wrap_dim(d, x.rank())));
  }
  std::vector<Expr> sizes = x.dims;
  return remap(n, [dims, sizes](const Index& idx) {
    Index in = idx;
    for (size_t d : dims) in[d] = simplify(sizes[d] - make_int(1) - idx[d]);
    return in;
  });
}

std::vector<Operand> lower_diagonal(NodeLowering& n) {
  const int64_t r = n.in(0).rank();
  const size_t d1 = size_t(wrap_dim(n.attrs().get_int("dim1"), r));
  const size_t d2 = size_t(wrap_dim(n.attrs().get_int("dim2"), r));
  const int64_t offset = n.attrs().get_int("offset");
  return remap(n, [r, d1, d2, offset](const Index& idx) {
    Index in(static_cast<size_t>(r));
    size_t k = 0;
    for (size_t d = 0; d < size_t(r); ++d) {
      if (d != d1 && d != d2) in[d] = idx[k++];
    }
    const Expr& diag = idx.back();
    in[d1] = simplify(diag + make_int(std::max<int64_t>(0, -offset)));
    in[d2] = simplify(diag + make_int(std::max<int64_t>(0, offset)));
    return in;
  });
}

std::vector<Operand> lower_unfold(NodeLowering& n) {
  const size_t d = size_t(wrap_dim(n.attrs().get_int("dimension"), n.in(0).rank()));
  const int64_t step = n.attrs().get_int("step");
  return remap(n, [d, step](const Index& idx) {
    Index in(idx.begin(), idx.end() - 1);
    in[d] = simplify(idx[d] * make_int(step) + idx.back());
    return in;
  });
}

}  // namespace

void register_layout_stride_lowerings(LoweringTable& t) {
  t["flip"].pointwise = lower_flip;
  t["diagonal"].pointwise = lower_diagonal;
  t["unfold"].pointwise = lower_unfold;
}

}  // namespace kiln::passes::lower
