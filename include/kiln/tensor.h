// kiln::Tensor: a strided view over reference-counted, 64-byte aligned Storage.
//
// Copying a Tensor shares its storage (like torch.Tensor); clone() copies data.
// Sizes and strides are in elements. A default-constructed Tensor is
// "undefined" (defined() == false) and stands for an absent optional tensor.
//
// A tensor lives on a device (its storage's). The host reads only host
// tensors: on any other device (e.g. kiln::Device::sim()), element access,
// printing, equal(), to(DType), .npy writing and packing a strided view throw
// kiln::Error naming the device and the fix, .to(kiln::Device::cpu()).
// data_ptr() of a device tensor is the device address, as in torch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln {

using Shape = std::vector<int64_t>;

class Storage {
 public:
  // Allocates nbytes (zero allowed), 64-byte aligned, on `device`: plain host
  // memory for the cpu, the device runtime's caching pool otherwise. Throws
  // kiln::Error on allocation failure (naming the size and device) or when
  // the device is unavailable (saying why).
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device = Device::cpu());
  // Wraps memory owned elsewhere; `deleter` (may be empty) runs when the last
  // reference goes away.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::function<void(void*)> deleter_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape sizes, Shape strides,
         int64_t storage_offset = 0);

  // --- factories -----------------------------------------------------------
  // Uninitialized; on a device, allocated through that device's runtime.
  static Tensor empty(const Shape& sizes, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor zeros(const Shape& sizes, DType dtype = DType::F32);
  static Tensor ones(const Shape& sizes, DType dtype = DType::F32);
  static Tensor full(const Shape& sizes, double value, DType dtype = DType::F32);
  // [start, end) by step, like torch.arange; dtype I64 unless given.
  static Tensor arange(double start, double end, double step = 1, DType dtype = DType::I64);
  // Counter-based (Philox-style) generator: element i depends only on (seed, i),
  // so results never depend on thread count or chunking.
  static Tensor rand(const Shape& sizes, uint64_t seed, DType dtype = DType::F32);   // [0, 1)
  static Tensor randn(const Shape& sizes, uint64_t seed, DType dtype = DType::F32);  // N(0, 1)
  // Wraps caller-owned memory without copying; strides default to contiguous.
  static Tensor from_blob(void* data, const Shape& sizes, DType dtype, Shape strides = {});
  // A 0-dim tensor holding one value.
  static Tensor scalar(double value, DType dtype = DType::F32);

  // --- metadata --------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const { return offset_; }
  int64_t numel() const;
  size_t element_size() const { return dtype_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element 0 of this view (storage base + offset).
  void* data_ptr() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  // --- element access (any dtype, through double / int64) ---------------------
  // `index` has one entry per dim. Values convert as a C cast would, with f16 and
  // bf16 rounded to nearest even.
  double get(std::span<const int64_t> index) const;
  int64_t get_int(std::span<const int64_t> index) const;
  void set(std::span<const int64_t> index, double value);
  void set_int(std::span<const int64_t> index, int64_t value);
  double item() const;  // requires numel() == 1

  // --- views and copies ------------------------------------------------------------
  Tensor view_as_strided(Shape sizes, Shape strides, int64_t storage_offset) const;
  Tensor contiguous() const;  // this if already contiguous, else a packed copy (host only)
  // Always a packed copy, on this tensor's device (a strided view only on the host).
  Tensor clone() const;
  Tensor to(DType dtype) const;  // converted packed copy (or this if same dtype)
  // A packed copy on `device` (or this if already there). A strided host view
  // is packed on the host first; a strided view on a device is an error (Kiln
  // packs only on the host).
  Tensor to(Device device) const;

  // Exact equality of shape, dtype and every element (NaN equals NaN).
  bool equal(const Tensor& other) const;

  // Small tensors print in full, large ones elided like torch:
  //   tensor([[1., 2.], [3., 4.]], dtype=f32)
  std::string to_string(int64_t max_elements = 64) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::F32;
  Shape sizes_, strides_;
  int64_t offset_ = 0;
};

Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& sizes);
std::string shape_str(const Shape& sizes);  // "[2, 3]"

// --- limits --------------------------------------------------------------------------
// The most dims a tensor (or a tensor type) may have, as in PyTorch. Every
// pass walks dims recursively or keeps per-dim tables, so deeper shapes would
// cost memory and stack quadratic in the rank for no real use.
inline constexpr int64_t kMaxRank = 64;
// Throws kiln::Error ("tensor of rank N: Kiln supports at most 64 dimensions")
// when rank > kMaxRank.
void check_rank(int64_t rank);
// Bytes a packed tensor of `sizes` and `dtype` needs. Throws kiln::Error when
// the rank exceeds kMaxRank, a size is negative, or the element or byte count
// leaves int64, e.g. "tensor of shape [2147483648, 2147483648] (f32) needs
// 2^64 bytes: too large".
size_t shape_nbytes(const Shape& sizes, DType dtype);

// Statistics of a floating tensor's values in one streaming pass (no copy),
// for printing. NaNs are only counted; min, max and mean are NaN when every
// value is NaN (or there are none). The mean is accumulated in blocks so that
// it stays accurate for billions of values.
struct FloatStats {
  int64_t count = 0;      // non-NaN values
  int64_t nan_count = 0;  // NaN values
  double min = 0, max = 0, mean = 0;
};
FloatStats float_stats(const Tensor& t);  // host tensors of a floating dtype

// --- .npy files --------------------------------------------------------------------
// Reads a C-order .npy array (versions 1.0-3.0) of dtype |b1 i1 u1 i2 i4 i8 f2 f4
// f8 in either byte order. bf16 has no numpy dtype: Kiln writes it with the
// Kiln-specific descr 'bf16' and reads it back (numpy cannot; convert to f32 to
// share). Writes are C-order version 1.0 with the header padded to 64 bytes.
// Errors are kiln::Error starting with the file path and naming the problem:
// cannot open, bad magic, truncated header or data, malformed header, Fortran
// order, unsupported dtype.
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace kiln
