// The CUDA emulation harness: compiles CUDA C text (the CUDA emitter's
// output, or kernels written by hand in its style) as host C++ against
// codegen/cuda/emulation.h and runs its kernels on the CPU, so a test can
// compare an emitted kernel's numbers with the interpreter's and see the
// emulator's reports (races, divergent barriers, ...).
//
// Many programs go into one shared object, built by one compiler run (the
// system C++ compiler CMake used, with the test binary's sanitizer flags, or
// -O1): a test shard pays the compiler once. Each program keeps its own
// namespace and its kernels are renamed, so two programs may both define a
// kernel `k0`. The object is cached in the build tree by the hash of what
// went into it, so a rerun does not compile again.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "codegen/cuda/emulation/abi.h"

namespace kiln::emutest {

// Why the harness cannot run here ("" when it can): no compiler, no runtime library.
std::string unavailable_reason();

struct Program {
  std::string name;  // the file name messages show ("softmax.cu"); "program<i>.cu" when empty
  std::string cuda;  // its CUDA C, without the prelude
};

struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

struct KernelInfo {
  size_t program = 0;
  std::string name;
  unsigned launch_bound = 0;  // 0: the source gave none
  std::vector<emu::ParamInfo> params;
};

// A batch of programs compiled into one loaded shared object.
class Library {
 public:
  // Compiles `programs`; `prelude` is extra text put before them (the CUDA
  // prelude itself comes through emulation.h, and a program's `#include
  // "kiln_prelude.cuh"` line is dropped). Throws std::runtime_error with the compiler's log, naming
  // the generated source (kept for reading), when it does not compile.
  static std::shared_ptr<const Library> build(const std::vector<Program>& programs,
                                              std::string_view prelude = {});

  size_t num_programs() const { return num_programs_; }
  // The kernels of `program`, in source order.
  std::vector<const KernelInfo*> kernels(size_t program) const;
  // Throws std::out_of_range naming the kernels there are.
  const KernelInfo& kernel(size_t program, std::string_view name) const;

  // Runs one launch: buffers follow the kernel's pointer parameters, scalars
  // its other parameters, in the calling convention's 64-bit slots. Throws
  // kiln::emu::Error with the emulator's report.
  void launch(const KernelInfo& kernel, Dim grid, Dim block, std::span<void* const> buffers,
              std::span<const int64_t> scalars, size_t shared_bytes = 0) const;

 private:
  Library() = default;
  size_t num_programs_ = 0;
  std::vector<KernelInfo> infos_;
  std::vector<const emu::KernelEntry*> entries_;  // parallel to infos_
  emu::KilnEmuRunFn run_ = nullptr;
};

// Device-style memory for a launch: exactly `count` elements on the heap (so
// ASan sees an overrun), fresh ones poisoned like the emulator's shared
// memory (0xFF bytes: NaN for floats; 0xBE bytes for integers).
class Buffer {
 public:
  Buffer(size_t elem_size, size_t count, bool integral);
  template <class T>
  static Buffer poisoned(size_t count) {
    return Buffer(sizeof(T), count, std::is_integral_v<T>);
  }
  template <class T>
  static Buffer of(const std::vector<T>& values) {
    Buffer b(sizeof(T), values.size(), std::is_integral_v<T>);
    if (!values.empty()) std::memcpy(b.data(), values.data(), values.size() * sizeof(T));
    return b;
  }
  void* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }
  template <class T>
  std::vector<T> values() const {
    std::vector<T> out(bytes_ / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), data_.get(), out.size() * sizeof(T));
    return out;
  }

 private:
  std::unique_ptr<unsigned char[]> data_;
  size_t bytes_ = 0;
};

}  // namespace kiln::emutest
