// Storage (64-byte aligned, reference counted) and Tensor: construction,
// factories, metadata, element access, views, copies and conversions.
//
// A Tensor is a strided view (sizes, strides, offset; all in elements) over a
// Storage. Every view is bounds-checked against its storage when it is made,
// so element access afterwards only checks indices. Host storage is plain
// aligned memory, freed when dropped; a device's comes from its runtime's
// caching pool (runtime/device.h), and the host never reads it through a
// Tensor: element access and host-side copies of a device tensor are errors
// that name the fix, .to(kiln::Device::cpu()). Random factories live in
// random.cpp, printing in print.cpp, .npy I/O in npy.cpp.
#include "kiln/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "kiln/element.h"
#include "kiln/error.h"
#include "runtime/device.h"
#include "runtime/strided.h"

namespace kiln {
namespace {

constexpr size_t kAlignment = 64;
// Far beyond any real machine; stops garbage sizes (e.g. from a corrupt file)
// before they reach the allocator.
constexpr size_t kMaxAllocation = size_t{1} << 46;  // 64 TiB

// Bytes needed for `sizes` of `dtype`; `what` names the caller in errors.
size_t checked_nbytes(const Shape& sizes, DType dtype, const char* what) {
  try {
    return shape_nbytes(sizes, dtype);
  } catch (const Error& e) {
    KILN_USER_ERROR(what << ": " << e.what());
  }
}

// Normalises a possibly negative dim; `op` names the caller for the message.
int64_t wrap_dim(int64_t d, int64_t rank, const char* op) {
  KILN_USER_CHECK(d >= -rank && d < rank, op << ": dim " << d << " out of range for a " << rank
                                             << "-D tensor (valid: " << -rank << " to " << rank - 1
                                             << ")");
  return d < 0 ? d + rank : d;
}

// Checks that a view stays inside a storage of `storage_elems` elements.
void check_view_bounds(const Shape& sizes, const Shape& strides, int64_t offset,
                       int64_t storage_elems, const char* op) {
  KILN_USER_CHECK(sizes.size() == strides.size(), op << ": sizes " << shape_str(sizes)
                                                     << " and strides " << shape_str(strides)
                                                     << " have different ranks");
  KILN_USER_CHECK(static_cast<int64_t>(sizes.size()) <= kMaxRank,
                  op << ": tensor of rank " << sizes.size() << ": Kiln supports at most "
                     << kMaxRank << " dimensions");
  for (int64_t s : sizes) {
    KILN_USER_CHECK(s >= 0, op << ": negative size in shape " << shape_str(sizes));
  }
  KILN_USER_CHECK(offset >= 0, op << ": negative storage offset " << offset);
  if (shape_numel(sizes) == 0) return;
  int64_t lo = offset, hi = offset;
  bool overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi);
  }
  KILN_USER_CHECK(!overflow && lo >= 0 && hi < storage_elems,
                  op << ": view of sizes " << shape_str(sizes) << ", strides " << shape_str(strides)
                     << ", offset " << offset << " reaches outside its storage of " << storage_elems
                     << " elements");
}

// Copies `src` element by element into the packed tensor `dst` (same shape),
// converting dtype when they differ.
void copy_into_packed(const Tensor& src, Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  auto* out = static_cast<char*>(dst.data_ptr());
  const auto* in = static_cast<const char*>(src.data_ptr());
  const size_t in_size = src.element_size(), out_size = dst.element_size();
  if (src.dtype() == dst.dtype() && src.is_contiguous()) {
    std::memcpy(out, in, static_cast<size_t>(n) * in_size);
    return;
  }
  const DType from = src.dtype(), to = dst.dtype();
  // Integers (and bool) go through int64 so large int64 values stay exact;
  // anything involving a float goes through double, which is exact for every
  // float dtype and truncates toward zero when the target is an integer.
  const bool via_int = !is_floating(from);
  int64_t i = 0;
  detail::for_each_offset(src.sizes(), src.strides(), [&](int64_t off) {
    const char* p = in + off * static_cast<int64_t>(in_size);
    char* q = out + i * static_cast<int64_t>(out_size);
    if (from == to) {
      std::memcpy(q, p, in_size);
    } else if (via_int) {
      store_int(to, q, load_as_int(from, p));
    } else {
      store_double(to, q, load_as_double(from, p));
    }
    ++i;
  });
}

}  // namespace

namespace runtime {
void check_host_readable(const Tensor& t, const char* op) {
  KILN_USER_CHECK(t.device().is_cpu(), op << ": the tensor lives on " << t.device().str()
                                          << ", whose memory the host cannot read; copy it first"
                                             " with .to(kiln::Device::cpu())");
}
}  // namespace runtime

using runtime::check_host_readable;

// --- Storage -----------------------------------------------------------------------

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  KILN_USER_CHECK(nbytes <= kMaxAllocation, "out of memory: cannot allocate "
                                                << nbytes << " bytes for a tensor on "
                                                << device.str() << " (Kiln's limit is "
                                                << kMaxAllocation << " bytes)");
  // Devices cache their memory (allocation there is slow, as with a GPU's);
  // host tensors go back to the system when dropped, as torch's do. The
  // executable's per-call buffers use the host's caching pool instead.
  if (device != Device::cpu()) return runtime::device_runtime(device).allocate(nbytes);
  // Zero-size storage still gets a real block so data() is never null (memcpy
  // and friends reject null even for zero lengths).
  size_t rounded = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  KILN_USER_CHECK(p != nullptr,
                  "out of memory: cannot allocate " << nbytes << " bytes for a tensor on cpu");
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = p;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->deleter_ = [](void* q) { std::free(q); };
  return s;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  KILN_USER_CHECK(data != nullptr || nbytes == 0,
                  "Storage::wrap: null pointer for " << nbytes << " bytes");
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->deleter_ = std::move(deleter);
  return s;
}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

// --- shape helpers -----------------------------------------------------------------

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    // Size-0 dims still get the stride of a size-1 dim, as in PyTorch.
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    KILN_USER_CHECK(!__builtin_mul_overflow(n, s, &n),
                    "shape " << shape_str(sizes) << " has more elements than int64 can count");
  }
  return n;
}

void check_rank(int64_t rank) {
  KILN_USER_CHECK(rank <= kMaxRank, "tensor of rank " << rank << ": Kiln supports at most "
                                                      << kMaxRank << " dimensions");
}

size_t shape_nbytes(const Shape& sizes, DType dtype) {
  check_rank(static_cast<int64_t>(sizes.size()));
  bool empty = false;
  for (int64_t s : sizes) {
    KILN_USER_CHECK(s >= 0, "negative size in shape " << shape_str(sizes));
    empty |= s == 0;
  }
  // A zero-size dim makes the tensor empty whatever the other sizes are.
  if (empty) return 0;
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  bool overflow = false;
  for (int64_t s : sizes) overflow |= __builtin_mul_overflow(bytes, s, &bytes);
  if (overflow) {
    double log2_bytes = std::log2(static_cast<double>(dtype_size(dtype)));
    for (int64_t s : sizes) log2_bytes += std::log2(static_cast<double>(s));
    std::ostringstream need;
    need.precision(4);
    need << log2_bytes;
    KILN_USER_ERROR("tensor of shape " << shape_str(sizes) << " (" << dtype_name(dtype)
                                       << ") needs 2^" << need.str() << " bytes: too large");
  }
  return static_cast<size_t>(bytes);
}

std::string shape_str(const Shape& sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
  os << "]";
  return os.str();
}

// --- Tensor --------------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape sizes, Shape strides,
               int64_t storage_offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(storage_offset) {
  KILN_USER_CHECK(storage_ != nullptr, "Tensor: null storage");
  check_view_bounds(sizes_, strides_, offset_,
                    static_cast<int64_t>(storage_->nbytes() / dtype_size(dtype_)), "Tensor");
}

Tensor Tensor::empty(const Shape& sizes, DType dtype, Device device) {
  size_t nbytes = checked_nbytes(sizes, dtype, "Tensor::empty");
  return Tensor(Storage::allocate(nbytes, device), dtype, sizes, contiguous_strides(sizes), 0);
}

Tensor Tensor::zeros(const Shape& sizes, DType dtype) {
  Tensor t = empty(sizes, dtype);
  // All-zero bytes are 0 / 0.0 / false in every dtype.
  std::memset(t.data_ptr(), 0, t.storage_->nbytes());
  return t;
}

Tensor Tensor::ones(const Shape& sizes, DType dtype) {
  return full(sizes, 1.0, dtype);
}

Tensor Tensor::full(const Shape& sizes, double value, DType dtype) {
  Tensor t = empty(sizes, dtype);
  const size_t es = t.element_size();
  auto* p = static_cast<char*>(t.data_ptr());
  const int64_t n = t.numel();
  if (n == 0) return t;
  store_double(dtype, p, value);
  for (int64_t i = 1; i < n; ++i) std::memcpy(p + i * static_cast<int64_t>(es), p, es);
  return t;
}

Tensor Tensor::arange(double start, double end, double step, DType dtype) {
  KILN_USER_CHECK(
      std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
      "arange: start " << start << ", end " << end << " and step " << step << " must be finite");
  KILN_USER_CHECK(step != 0, "arange: step must be nonzero");
  KILN_USER_CHECK(
      (step > 0 && end >= start) || (step < 0 && end <= start),
      "arange: end " << end << " is not reachable from start " << start << " with step " << step);
  double count = std::ceil((end - start) / step);
  KILN_USER_CHECK(count < 9.0e15, "arange: " << count << " elements is too many");
  auto n = static_cast<int64_t>(count);
  Tensor t = empty({n}, dtype);
  auto* p = static_cast<char*>(t.data_ptr());
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (int64_t i = 0; i < n; ++i) store_double(dtype, p + i * es, start + double(i) * step);
  return t;
}

Tensor Tensor::from_blob(void* data, const Shape& sizes, DType dtype, Shape strides) {
  if (strides.empty() && !sizes.empty()) strides = contiguous_strides(sizes);
  KILN_USER_CHECK(sizes.size() == strides.size(),
                  "from_blob: sizes " << shape_str(sizes) << " and strides " << shape_str(strides)
                                      << " have different ranks");
  checked_nbytes(sizes, dtype, "from_blob");
  // The wrapped extent is exactly what the view reaches (negative strides are
  // not supported here: the blob pointer is element 0).
  int64_t extent = 0;
  if (shape_numel(sizes) > 0) {
    extent = 1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      KILN_USER_CHECK(strides[i] >= 0, "from_blob: negative stride in " << shape_str(strides));
      int64_t span = 0;
      KILN_USER_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) &&
                          !__builtin_add_overflow(extent, span, &extent),
                      "from_blob: strides " << shape_str(strides) << " overflow");
    }
  }
  KILN_USER_CHECK(data != nullptr || extent == 0,
                  "from_blob: null data for shape " << shape_str(sizes));
  size_t nbytes = static_cast<size_t>(extent) * dtype_size(dtype);
  return Tensor(Storage::wrap(data, nbytes, Device::cpu(), {}), dtype, sizes, std::move(strides),
                0);
}

Tensor Tensor::scalar(double value, DType dtype) {
  return full({}, value, dtype);
}

Device Tensor::device() const {
  return storage_ ? storage_->device() : Device::cpu();
}

int64_t Tensor::size(int64_t d) const {
  return sizes_[size_t(wrap_dim(d, dim(), "size"))];
}

int64_t Tensor::stride(int64_t d) const {
  return strides_[size_t(wrap_dim(d, dim(), "stride"))];
}

int64_t Tensor::numel() const {
  return shape_numel(sizes_);
}

bool Tensor::is_contiguous() const {
  // Size-1 dims may have any stride; an empty tensor is trivially contiguous.
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 0) return true;
    if (sizes_[i] != 1 && strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(element_size());
}

namespace {
// Offset in elements of `index` within `t`, with negative indices counting from
// the end (like Python) and a clear message for anything out of range.
int64_t element_offset(const Tensor& t, std::span<const int64_t> index, const char* op) {
  KILN_USER_CHECK(t.defined(), op << ": tensor is undefined");
  KILN_USER_CHECK(int64_t(index.size()) == t.dim(),
                  op << ": got " << index.size() << " indices for a " << t.dim()
                     << "-D tensor of shape " << shape_str(t.sizes()));
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    int64_t n = t.sizes()[d], i = index[d];
    KILN_USER_CHECK(i >= -n && i < n, op << ": index " << i << " out of range for dim " << d
                                         << " of size " << n << " (shape " << shape_str(t.sizes())
                                         << ")");
    if (i < 0) i += n;
    off += i * t.strides()[d];
  }
  return off;
}

char* element_ptr(const Tensor& t, std::span<const int64_t> index, const char* op) {
  int64_t off = element_offset(t, index, op);
  check_host_readable(t, op);
  return static_cast<char*>(t.data_ptr()) + off * static_cast<int64_t>(t.element_size());
}
}  // namespace

double Tensor::get(std::span<const int64_t> index) const {
  return load_as_double(dtype_, element_ptr(*this, index, "Tensor::get"));
}

int64_t Tensor::get_int(std::span<const int64_t> index) const {
  return load_as_int(dtype_, element_ptr(*this, index, "Tensor::get_int"));
}

void Tensor::set(std::span<const int64_t> index, double value) {
  store_double(dtype_, element_ptr(*this, index, "Tensor::set"), value);
}

void Tensor::set_int(std::span<const int64_t> index, int64_t value) {
  store_int(dtype_, element_ptr(*this, index, "Tensor::set_int"), value);
}

double Tensor::item() const {
  KILN_USER_CHECK(defined(), "item: tensor is undefined");
  check_host_readable(*this, "Tensor::item");
  KILN_USER_CHECK(numel() == 1, "item: tensor of shape " << shape_str(sizes_) << " has " << numel()
                                                         << " elements, expected exactly 1");
  return load_as_double(dtype_, data_ptr());
}

Tensor Tensor::view_as_strided(Shape sizes, Shape strides, int64_t storage_offset) const {
  KILN_USER_CHECK(defined(), "view_as_strided: tensor is undefined");
  return Tensor(storage_, dtype_, std::move(sizes), std::move(strides), storage_offset);
}

Tensor Tensor::contiguous() const {
  if (!defined() || is_contiguous()) return *this;
  check_host_readable(*this, "Tensor::contiguous");
  return clone();
}

Tensor Tensor::clone() const {
  if (!defined()) return *this;
  Tensor out = empty(sizes_, dtype_, device());
  if (!device().is_cpu() && is_contiguous()) {
    // A byte copy within the device; packing a strided view would need a kernel.
    if (numel() == 0) return out;
    runtime::copy_bytes(*out.storage_, 0, *storage_, size_t(offset_) * element_size(),
                        size_t(numel()) * element_size());
    return out;
  }
  check_host_readable(*this, "Tensor::clone");
  copy_into_packed(*this, out);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (!defined() || dtype == dtype_) return *this;
  check_host_readable(*this, "Tensor::to(dtype)");
  Tensor out = empty(sizes_, dtype, device());
  copy_into_packed(*this, out);
  return out;
}

Tensor Tensor::to(Device device) const {
  const Device from = this->device();
  if (!defined() || device == from) return *this;
  Tensor src = *this;
  if (!is_contiguous()) {
    KILN_USER_CHECK(from.is_cpu(), "Tensor::to(" << device.str() << "): this view of sizes "
                                                 << shape_str(sizes_) << ", strides "
                                                 << shape_str(strides_) << " on " << from.str()
                                                 << " is not contiguous, and Kiln cannot pack it"
                                                    " there; copy a contiguous tensor instead");
    src = contiguous();  // packed on the host, so the device gets one plain copy
  }
  Tensor out = empty(sizes_, dtype_, device);
  // An empty view's offset may lie past its storage: there is nothing to copy.
  if (numel() == 0) return out;
  runtime::copy_bytes(*out.storage_, 0, *src.storage_, size_t(src.offset_) * element_size(),
                      size_t(numel()) * element_size());
  return out;
}

bool Tensor::equal(const Tensor& other) const {
  if (defined() != other.defined()) return false;
  if (!defined()) return true;
  check_host_readable(*this, "Tensor::equal");
  check_host_readable(other, "Tensor::equal");
  if (dtype_ != other.dtype_ || sizes_ != other.sizes_) return false;
  const Tensor a = contiguous(), b = other.contiguous();
  const auto* pa = static_cast<const char*>(a.data_ptr());
  const auto* pb = static_cast<const char*>(b.data_ptr());
  const int64_t n = a.numel(), es = static_cast<int64_t>(element_size());
  const bool fp = is_floating(dtype_);
  for (int64_t i = 0; i < n; ++i) {
    if (fp) {
      double x = load_as_double(dtype_, pa + i * es), y = load_as_double(dtype_, pb + i * es);
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    } else if (load_as_int(dtype_, pa + i * es) != load_as_int(dtype_, pb + i * es)) {
      return false;
    }
  }
  return true;
}

}  // namespace kiln
