// Kiln's CUDA emulation header: the names emitted CUDA C uses, defined for
// host C++20 (g++ 12, clang 14), so a kernel printed by the CUDA emitter can
// be compiled a second time as C++ and run on the CPU under ASan/UBSan. This
// checks the emitter's text itself, where the sim device (the loop-IR
// evaluator) checks only the schedule it prints.
//
// What a kernel may use (contract item 4 of the CUDA backend plan):
//   __global__ __device__ __host__ __forceinline__
//   __launch_bounds__(...)  __restrict__ (the compiler's own)
//   threadIdx blockIdx blockDim gridDim (.x .y .z, unsigned int), warpSize
//   __syncthreads()
//   KILN_SHARED(T, name, n)                   a per-block shared array
//   __shfl_sync / __shfl_up_sync / __shfl_down_sync / __shfl_xor_sync
//   __ballot_sync / __any_sync / __all_sync
//   CUDA's vector types (float4, int2, ...) with make_<type>(), __ldg, the
//   bit-cast intrinsics (__float_as_int, ...), rsqrtf, <math.h>'s functions.
// Everything else a kernel needs comes from Kiln's CUDA prelude
// (codegen/cuda/kiln_prelude.cuh), which compiles as host C++ too: this
// header includes it when it is there (a program's own `#include
// "kiln_prelude.cuh"` line is then dropped by the harness).
//
// How it runs (codegen/cuda/emulation/scheduler.cpp): kiln::emu::launch runs
// the blocks one after another; inside a block each CUDA thread is a fiber
// (its own stack, context.h), scheduled deterministically: the runnable
// threads run in linear-id order until each blocks at a __syncthreads() or a
// warp collective, or exits. __syncthreads() is a block barrier that reports
// (ErrorKind::Divergence, naming the kernel, the block and the call sites)
// when threads reach different barriers or exit while others wait. Warp
// collectives complete when every lane named in the mask has reached one, so
// shuffles run in lock step and a lane that never arrives is reported.
//
// Shared memory: KILN_SHARED(T, name, n) gives every thread of a block the
// same n elements, fresh for each block and poisoned (0xFF bytes, a NaN in
// every float format; 0xBE bytes for integers). Each access goes through a
// checked reference that bounds-checks the index and records, per element,
// the barrier interval (epoch) and thread of the last write and of the reads.
// Two threads touching one element in one interval, at least one of them
// writing, is a race (ErrorKind::Race: a __syncthreads() is missing), and a
// read of an element no thread wrote is ErrorKind::Uninitialized. Because
// both orders are recorded, the sequential schedule finds every such pair
// on the paths the threads take, whichever thread ran first.
//
// A shared array's name supports `name[i]` as a value (conversion to T), as
// the target of = and of compound assignment, and `name + i` for the
// prelude's kiln_vload / kiln_vstore (each lane checked). It is not a raw
// pointer: &name[i], a cast of name + i, or passing it where a T* is wanted
// do not compile, so no access escapes the checks. A value read from it
// converts implicitly to T only (one user-defined conversion: kiln_f16 h =
// name[i] works, float f = name[i] of a kiln_f16 array needs the prelude's
// conversion function, as it does on the GPU).
#pragma once

#define KILN_CUDA_EMULATION 1

#include <math.h>  // the global-namespace overloads CUDA code calls (expf, fmaxf, isnan)

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "codegen/cuda/emulation/abi.h"

// Vector types with CUDA's sizes and alignments, and their make_ functions.
#define KILN_EMU_VEC1(T, N, A)   \
  struct alignas(A) N##1 {       \
    T x;                         \
  };                             \
  inline N##1 make_##N##1(T x) { \
    return N##1 {x};             \
  }
#define KILN_EMU_VEC2(T, N, A)        \
  struct alignas(A) N##2 {            \
    T x, y;                           \
  };                                  \
  inline N##2 make_##N##2(T x, T y) { \
    return N##2 {x, y};               \
  }
#define KILN_EMU_VEC3(T, N)                \
  struct N##3 {                            \
    T x, y, z;                             \
  };                                       \
  inline N##3 make_##N##3(T x, T y, T z) { \
    return N##3 {x, y, z};                 \
  }
#define KILN_EMU_VEC4(T, N, A)                  \
  struct alignas(A) N##4 {                      \
    T x, y, z, w;                               \
  };                                            \
  inline N##4 make_##N##4(T x, T y, T z, T w) { \
    return N##4 {x, y, z, w};                   \
  }
#define KILN_EMU_VECS(T, N, S) \
  KILN_EMU_VEC1(T, N, S)       \
  KILN_EMU_VEC2(T, N, 2 * S)   \
  KILN_EMU_VEC3(T, N)          \
  KILN_EMU_VEC4(T, N, 4 * S)
KILN_EMU_VECS(signed char, char, 1)
KILN_EMU_VECS(unsigned char, uchar, 1)
KILN_EMU_VECS(short, short, 2)
KILN_EMU_VECS(unsigned short, ushort, 2)
KILN_EMU_VECS(int, int, 4)
KILN_EMU_VECS(unsigned int, uint, 4)
KILN_EMU_VECS(float, float, 4)
// CUDA caps the 64-bit types' 4-vectors at 16-byte alignment (their "_16a" form is the default).
KILN_EMU_VEC1(long long, longlong, 8)
KILN_EMU_VEC2(long long, longlong, 16)
KILN_EMU_VEC3(long long, longlong)
KILN_EMU_VEC4(long long, longlong, 16)
KILN_EMU_VEC1(unsigned long long, ulonglong, 8)
KILN_EMU_VEC2(unsigned long long, ulonglong, 16)
KILN_EMU_VEC3(unsigned long long, ulonglong)
KILN_EMU_VEC4(unsigned long long, ulonglong, 16)
KILN_EMU_VEC1(double, double, 8)
KILN_EMU_VEC2(double, double, 16)
KILN_EMU_VEC3(double, double)
KILN_EMU_VEC4(double, double, 16)
#undef KILN_EMU_VECS
#undef KILN_EMU_VEC4
#undef KILN_EMU_VEC3
#undef KILN_EMU_VEC2
#undef KILN_EMU_VEC1

namespace kiln::emu {

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
};

namespace detail {

// The coordinates of the running CUDA thread (its fiber). kiln::emu::Error
// when no kernel is running on this OS thread.
struct Coords {
  ::uint3 thread_idx;
  ::uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
const Coords& coords();

void syncthreads(const char* file, int line);

enum class WarpOp : int { ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All, MmaF16, MmaBf16 };
// One lane's part of a warp collective: blocks until every lane of `mask`
// has reached it; returns the lane's result (the shuffled bits, or the vote).
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width,
                         const char* file, int line);

// One lane's part of the tensor-core product mma.sync.m16n8k16 (f32 += f16 x
// f16 or bf16 x bf16; PTX's fragment layout): blocks until all 32 lanes of
// the warp have called it, then each lane's c[0..3] takes its elements of
// the product of the fragments a[0..3] (A, 16x16) and b[0..1] (B, 16x8).
void warp_mma(bool bf16, float* c, const uint32_t* a, const uint32_t* b, const char* file,
              int line);

// One KILN_SHARED array of the running block (owned by the block).
struct SharedDecl;
// The running block's array declared at (name, file, line): made and poisoned
// by the first thread that declares it, the same storage for the others.
SharedDecl* declare_shared(const char* name, size_t elem_size, size_t count, bool integral,
                           const char* file, int line, void** data);
// Checks one access (bounds, races, uninitialized reads); does not return on
// an error (the thread is stopped and the launch reports it).
void shared_access(SharedDecl* decl, long long index, bool write);

// A type-erased launch: `body(ctx)` is one CUDA thread's work.
struct LaunchSpec {
  const char* kernel_name;
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  unsigned launch_bound;  // 0: none
};
void launch_erased(const LaunchSpec& spec, void (*body)(void*), void* ctx);

// kiln_emu_run's body (see abi.h): the shared object's exported wrapper calls this.
int run_entry(const KernelEntry* entry, const unsigned grid[3], const unsigned block[3],
              size_t shared_bytes, void* const* buffers, size_t num_buffers, const int64_t* scalars,
              size_t num_scalars, char* report);

// The name of the function at `fn` when the dynamic linker knows it.
const char* symbol_name(const void* fn);

}  // namespace detail

template <class T>
class SharedArray;

// A checked element of a shared array (see the top of this file).
template <class T>
class SharedRef {
 public:
  SharedRef(detail::SharedDecl* decl, T* data, long long index)
      : decl_(decl), data_(data), index_(index) {}
  SharedRef(const SharedRef&) = default;

  operator T() const {
    detail::shared_access(decl_, index_, false);
    return data_[index_];
  }
  const SharedRef& operator=(const T& v) const {
    detail::shared_access(decl_, index_, true);
    data_[index_] = v;
    return *this;
  }
  const SharedRef& operator=(const SharedRef& other) const { return *this = static_cast<T>(other); }
  template <class U>
  const SharedRef& operator+=(const U& v) const {
    return *this = static_cast<T>(T(*this) + v);
  }
  template <class U>
  const SharedRef& operator-=(const U& v) const {
    return *this = static_cast<T>(T(*this) - v);
  }
  template <class U>
  const SharedRef& operator*=(const U& v) const {
    return *this = static_cast<T>(T(*this) * v);
  }
  template <class U>
  const SharedRef& operator/=(const U& v) const {
    return *this = static_cast<T>(T(*this) / v);
  }
  template <class U>
  const SharedRef& operator|=(const U& v) const {
    return *this = static_cast<T>(T(*this) | v);
  }
  template <class U>
  const SharedRef& operator&=(const U& v) const {
    return *this = static_cast<T>(T(*this) & v);
  }
  template <class U>
  const SharedRef& operator^=(const U& v) const {
    return *this = static_cast<T>(T(*this) ^ v);
  }
  // Shared memory is not addressable in the emulator: a pointer would bypass the checks.
  void operator&() const = delete;

 private:
  detail::SharedDecl* decl_;
  T* data_;
  long long index_;
};

// `name + offset` of a shared array: what the emitter hands kiln_vload and
// kiln_vstore for a vector access. Indexing it is checked like the array's.
template <class T>
class SharedPtr {
 public:
  SharedPtr(detail::SharedDecl* decl, T* data, long long offset)
      : decl_(decl), data_(data), offset_(offset) {}
  template <class I>
  SharedRef<T> operator[](I index) const {
    static_assert(std::is_integral_v<I>, "a shared array index must be an integer");
    return SharedRef<T>(decl_, data_, offset_ + static_cast<long long>(index));
  }
  SharedRef<T> operator*() const { return SharedRef<T>(decl_, data_, offset_); }
  template <class I>
  SharedPtr operator+(I n) const {
    static_assert(std::is_integral_v<I>, "a shared pointer offset must be an integer");
    return SharedPtr(decl_, data_, offset_ + static_cast<long long>(n));
  }

 private:
  detail::SharedDecl* decl_;
  T* data_;
  long long offset_;
};

template <class T>
class SharedArray {
 public:
  SharedArray(detail::SharedDecl* decl, T* data) : decl_(decl), data_(data) {}
  template <class I>
  SharedRef<T> operator[](I index) const {
    static_assert(std::is_integral_v<I>, "a shared array index must be an integer");
    return SharedRef<T>(decl_, data_, static_cast<long long>(index));
  }
  template <class I>
  SharedPtr<T> operator+(I n) const {
    static_assert(std::is_integral_v<I>, "a shared pointer offset must be an integer");
    return SharedPtr<T>(decl_, data_, static_cast<long long>(n));
  }

 private:
  detail::SharedDecl* decl_;
  T* data_;
};

namespace detail {

template <class T>
SharedArray<T> shared_array(const char* name, long long count, const char* file, int line) {
  static_assert(std::is_trivially_copyable_v<T>, "KILN_SHARED needs a trivially copyable type");
  void* data = nullptr;
  SharedDecl* decl = declare_shared(name, sizeof(T), count < 0 ? 0 : static_cast<size_t>(count),
                                    std::is_integral_v<T>, file, line, &data);
  return SharedArray<T>(decl, static_cast<T*>(data));
}

template <class T>
uint64_t to_bits(const T& v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
T shfl(WarpOp op, const char* file, int line, unsigned mask, T v, int arg, int width = 32) {
  return from_bits<T>(warp_collective(op, mask, to_bits(v), arg, width, file, line));
}

inline unsigned vote(WarpOp op, const char* file, int line, unsigned mask, int predicate) {
  return static_cast<unsigned>(
      warp_collective(op, mask, predicate != 0 ? 1 : 0, 0, 32, file, line));
}

// One argument of the CUDA calling convention (contract item 2): pointers
// take the next buffer, everything else the next 64-bit scalar slot (f32 in
// its low 32 bits, f64 bit-cast, integers as is).
template <class P>
P unpack_arg(void* const* buffers, const int64_t* scalars, size_t& buffer_i, size_t& scalar_i) {
  if constexpr (std::is_pointer_v<P>) {
    return static_cast<P>(buffers[buffer_i++]);
  } else if constexpr (std::is_same_v<P, float>) {
    const uint32_t low = static_cast<uint32_t>(static_cast<uint64_t>(scalars[scalar_i++]));
    return from_bits<float>(low);
  } else if constexpr (std::is_same_v<P, double>) {
    return from_bits<double>(static_cast<uint64_t>(scalars[scalar_i++]));
  } else {
    static_assert(std::is_integral_v<P>, "a kernel parameter is a pointer or a scalar");
    return static_cast<P>(scalars[scalar_i++]);
  }
}

template <class P>
constexpr ParamInfo param_info() {
  if constexpr (std::is_pointer_v<P>) {
    using E = std::remove_cv_t<std::remove_pointer_t<P>>;
    return ParamInfo{true, std::is_floating_point_v<E> || !std::is_integral_v<E>,
                     static_cast<unsigned>(sizeof(E))};
  } else {
    return ParamInfo{false, std::is_floating_point_v<P>, static_cast<unsigned>(sizeof(P))};
  }
}

template <auto Fn>
struct EntryOf;

template <class... P, void (*Fn)(P...)>
struct EntryOf<Fn> {
  static void invoke(void* const* buffers, const int64_t* scalars) {
    size_t buffer_i = 0, scalar_i = 0;
    // Braced initialization evaluates left to right, so arguments unpack in order.
    std::tuple<P...> args{unpack_arg<P>(buffers, scalars, buffer_i, scalar_i)...};
    std::apply(Fn, args);
  }
  static constexpr ParamInfo params[sizeof...(P) + 1] = {param_info<P>()..., ParamInfo{}};
  static constexpr unsigned num_params = sizeof...(P);
};

}  // namespace detail

// The entry of a kernel for a shared object's table (see abi.h).
template <auto Fn>
constexpr KernelEntry make_entry(int program, const char* name, unsigned launch_bound) {
  return KernelEntry{program,
                     name,
                     launch_bound,
                     detail::EntryOf<Fn>::num_params,
                     detail::EntryOf<Fn>::params,
                     &detail::EntryOf<Fn>::invoke};
}

// Runs kernel(args...) on grid x block emulated threads; throws kiln::emu::Error
// with the first problem found (see the top of this file). shared_bytes is
// dynamic shared memory: it counts against the 48 KiB a block may use.
template <class... P, class... A>
void launch_named(const char* name, void (*kernel)(P...), dim3 grid, dim3 block,
                  size_t shared_bytes, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: wrong number of kernel arguments");
  struct Call {
    void (*kernel)(P...);
    std::tuple<P...> args;
    static void run(void* self) {
      Call* c = static_cast<Call*>(self);
      std::apply(c->kernel, c->args);
    }
  } call{kernel, std::tuple<P...>(std::forward<A>(args)...)};
  detail::launch_erased(detail::LaunchSpec{name, grid, block, shared_bytes, 0}, &Call::run, &call);
}

template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes, A&&... args) {
  launch_named(detail::symbol_name(reinterpret_cast<const void*>(kernel)), kernel, grid, block,
               shared_bytes, std::forward<A>(args)...);
}

}  // namespace kiln::emu

// ---- CUDA's names -----------------------------------------------------------

using kiln::emu::dim3;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

#define threadIdx (::kiln::emu::detail::coords().thread_idx)
#define blockIdx (::kiln::emu::detail::coords().block_idx)
#define blockDim (::kiln::emu::detail::coords().block_dim)
#define gridDim (::kiln::emu::detail::coords().grid_dim)
inline constexpr int warpSize = 32;

#define __syncthreads() ::kiln::emu::detail::syncthreads(__FILE__, __LINE__)

#define KILN_SHARED(T, name, n)      \
  ::kiln::emu::SharedArray<T> name = \
      ::kiln::emu::detail::shared_array<T>(#name, (n), __FILE__, __LINE__)

#define __shfl_sync(...) \
  ::kiln::emu::detail::shfl(::kiln::emu::detail::WarpOp::ShflIdx, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) \
  ::kiln::emu::detail::shfl(::kiln::emu::detail::WarpOp::ShflUp, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) \
  ::kiln::emu::detail::shfl(::kiln::emu::detail::WarpOp::ShflDown, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) \
  ::kiln::emu::detail::shfl(::kiln::emu::detail::WarpOp::ShflXor, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(mask, pred) \
  ::kiln::emu::detail::vote(::kiln::emu::detail::WarpOp::Ballot, __FILE__, __LINE__, (mask), (pred))
#define __any_sync(mask, pred)                                                                     \
  static_cast<int>(::kiln::emu::detail::vote(::kiln::emu::detail::WarpOp::Any, __FILE__, __LINE__, \
                                             (mask), (pred)))
#define __all_sync(mask, pred)                                                                     \
  static_cast<int>(::kiln::emu::detail::vote(::kiln::emu::detail::WarpOp::All, __FILE__, __LINE__, \
                                             (mask), (pred)))

// Device intrinsics with host definitions.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
inline int __float_as_int(float v) {
  return kiln::emu::detail::from_bits<int>(kiln::emu::detail::to_bits(v));
}
inline unsigned int __float_as_uint(float v) {
  return kiln::emu::detail::from_bits<unsigned int>(kiln::emu::detail::to_bits(v));
}
inline float __int_as_float(int v) {
  return kiln::emu::detail::from_bits<float>(kiln::emu::detail::to_bits(v));
}
inline float __uint_as_float(unsigned int v) {
  return kiln::emu::detail::from_bits<float>(kiln::emu::detail::to_bits(v));
}
inline long long __double_as_longlong(double v) {
  return kiln::emu::detail::from_bits<long long>(kiln::emu::detail::to_bits(v));
}
inline double __longlong_as_double(long long v) {
  return kiln::emu::detail::from_bits<double>(kiln::emu::detail::to_bits(v));
}
inline float rsqrtf(float v) {
  return 1.0f / sqrtf(v);
}
inline double rsqrt(double v) {
  return 1.0 / sqrt(v);
}
inline float __fmaf_rn(float a, float b, float c) {
  return fmaf(a, b, c);
}
inline double __fma_rn(double a, double b, double c) {
  return fma(a, b, c);
}
inline int __popc(unsigned int v) {
  return __builtin_popcount(v);
}
inline int __popcll(unsigned long long v) {
  return __builtin_popcountll(v);
}
inline int __clz(int v) {
  return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v));
}
inline int __clzll(long long v) {
  return v == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(v));
}
inline int __ffs(int v) {
  return __builtin_ffs(v);
}
inline int __ffsll(long long v) {
  return __builtin_ffsll(v);
}

// Kiln's CUDA prelude is host C++ too (codegen/cuda/kiln_prelude.cuh): its
// types and functions come from there, and a vector access to shared memory
// (kiln_vload / kiln_vstore of `name + offset`) is checked lane by lane.
#define KILN_EMU_MMA 1
static inline void kiln_mma_sync_f16(float* c, const unsigned int* a, const unsigned int* b) {
  ::kiln::emu::detail::warp_mma(false, c, a, b, __FILE__, __LINE__);
}
static inline void kiln_mma_sync_bf16(float* c, const unsigned int* a, const unsigned int* b) {
  ::kiln::emu::detail::warp_mma(true, c, a, b, __FILE__, __LINE__);
}
#if __has_include("codegen/cuda/kiln_prelude.cuh")
#include "codegen/cuda/kiln_prelude.cuh"
#define KILN_EMU_HAS_PRELUDE 1
template <typename T, int N>
static inline kiln_vec<T, N> kiln_vload(::kiln::emu::SharedPtr<T> p) {
  kiln_vec<T, N> r;
  for (int i = 0; i < N; ++i) r.v[i] = p[i];
  return r;
}
template <typename T, int N>
static inline void kiln_vstore(::kiln::emu::SharedPtr<T> p, const kiln_vec<T, N>& x) {
  for (int i = 0; i < N; ++i) p[i] = x.v[i];
}
#endif

// The exports of a shared object of emulated kernels (see abi.h): its table
// of `count` entries and the runtime's launch.
#define KILN_EMU_EXPORTS(entries, count)                                                          \
  extern "C" __attribute__((visibility("default"))) const ::kiln::emu::KernelEntry*               \
  kiln_emu_kernels(size_t* n) {                                                                   \
    *n = (count);                                                                                 \
    return (entries);                                                                             \
  }                                                                                               \
  extern "C" __attribute__((visibility("default"))) int kiln_emu_run(                             \
      const ::kiln::emu::KernelEntry* entry, const unsigned grid[3], const unsigned block[3],     \
      size_t shared_bytes, void* const* buffers, size_t num_buffers, const int64_t* scalars,      \
      size_t num_scalars, char* report) {                                                         \
    return ::kiln::emu::detail::run_entry(entry, grid, block, shared_bytes, buffers, num_buffers, \
                                          scalars, num_scalars, report);                          \
  }
