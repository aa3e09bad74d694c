// Shared machinery of the elementwise op families (unary, binary, compare,
// select): operand descriptions for error messages, broadcasting with messages
// that name operands and shapes, and the reference loop that maps a scalar
// function over broadcast views.
//
// The reference loops follow PyTorch's TensorIterator model: every operand is
// first converted to the op's compute dtype (so an i32 operand of an f32 add is
// an f32 value, and an f64 0-dim operand of an f32 mul is rounded to f32), the
// scalar function runs in double (floating compute) or int64 (integral and bool
// compute), and the result is rounded once into the output dtype.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/ops/ops.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::ir::ew {

// --- inference helpers -------------------------------------------------------------

// Dims of a tensor operand; [] for a scalar or none (they broadcast as 0-dim).
Dims dims_of(const Type& t);
// "'a' (f32[2, 3])" or "'b' (float)" — for error messages.
std::string describe(const InferContext& ctx, size_t i);
// Fails unless at least one of `which` is a tensor ("at least one of 'a', 'b'
// must be a tensor").
void require_tensor(const InferContext& ctx, std::initializer_list<size_t> which);
// Broadcast dims of the operands `which` (non-tensors count as []); fails naming
// the operand that does not fit and the shapes involved.
Dims broadcast_operands(const InferContext& ctx, std::initializer_list<size_t> which);
// result_type over the operands `which` that are not none.
DType promote_operands(const InferContext& ctx, std::initializer_list<size_t> which);
// Device of the tensor operands (all must agree); CPU when none is a tensor.
Device device_of(const InferContext& ctx, std::initializer_list<size_t> which);

// Fully inferred single output of an elementwise op over `which`.
std::vector<Type> elementwise_output(const InferContext& ctx, std::initializer_list<size_t> which,
                                     DType dtype);

// --- value conversion --------------------------------------------------------------

// `v` as stored in a floating dtype `t` and read back.
double round_to(DType t, double v);
// `v` as stored in an integral or bool dtype `t` and read back (wraps; bool is v != 0).
int64_t wrap_to(DType t, int64_t v);
// Two's-complement arithmetic on int64 without signed-overflow UB.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// True for the dtypes whose compute runs through int64 (integral and bool).
inline bool int_compute(DType t) {
  return !is_floating(t);
}
// PyTorch keeps wrapped-number operands of f16/bf16 arithmetic at float
// precision ("opmath") instead of rounding them to the tensor's 16-bit type.
DType opmath_dtype(DType compute, const Type& operand_type);

// --- reference loops ---------------------------------------------------------------

// One input of a reference loop and the dtype its values are converted to before
// the scalar function sees them.
struct LoopInput {
  Tensor value;
  DType as = DType::F64;
};

inline constexpr size_t kMaxLoopInputs = 4;

// Broadcast views of the loop inputs over the output shape.
class LoopInputs {
 public:
  LoopInputs(std::span<const LoopInput> inputs, const Shape& shape);
  size_t size() const { return views_.size(); }
  double load_double(size_t k, std::span<const int64_t> index) const;
  int64_t load_int(size_t k, std::span<const int64_t> index) const;

 private:
  const char* element(size_t k, std::span<const int64_t> index) const;
  struct View {
    const char* base;
    Shape strides;
    DType dtype;
    DType as;
  };
  std::vector<View> views_;
};

// out[i] = f(args) over every index of `shape`. Arg (double or int64_t) picks
// how inputs are read; f's return type (double or int64_t) picks how results
// are stored into `out_dtype`. Returns a fresh contiguous tensor.
template <typename Arg, typename F>
Tensor map_elements(std::span<const LoopInput> inputs, const Shape& shape, DType out_dtype, F&& f) {
  static_assert(std::is_same_v<Arg, double> || std::is_same_v<Arg, int64_t>);
  KILN_INTERNAL_CHECK(inputs.size() <= kMaxLoopInputs, "too many loop inputs");
  LoopInputs views(inputs, shape);
  Tensor out = Tensor::empty(shape, out_dtype);
  char* dst = static_cast<char*>(out.data_ptr());
  const size_t out_size = dtype_size(out_dtype);
  std::array<Arg, kMaxLoopInputs> args{};
  for_each_index(shape, [&](std::span<const int64_t> index) {
    for (size_t k = 0; k < views.size(); ++k) {
      if constexpr (std::is_same_v<Arg, double>) {
        args[k] = views.load_double(k, index);
      } else {
        args[k] = views.load_int(k, index);
      }
    }
    auto r = f(static_cast<const Arg*>(args.data()));
    if constexpr (std::is_same_v<decltype(r), double>) {
      store_double(out_dtype, dst, r);
    } else {
      store_int(out_dtype, dst, static_cast<int64_t>(r));
    }
    dst += out_size;
  });
  return out;
}

// Output shape of a reference call (the inferred static dims of output 0).
Shape output_shape(const RefContext& ctx);

}  // namespace kiln::ir::ew

namespace kiln::ir {
// Parts of register_binary_ops (ops/binary.cpp), one file each.
void register_compare_ops(OpRegistry& r);  // eq..ge, logical_*, bitwise_* (elementwise_compare.cpp)
void register_select_ops(OpRegistry& r);   // where, clamp, masked_fill     (elementwise_select.cpp)
}  // namespace kiln::ir
