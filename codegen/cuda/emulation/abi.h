// The part of Kiln's CUDA emulator that both sides of a dlopen boundary see:
// the error type, the description of an emulated kernel's parameters, and the
// C entry points a shared object of emulated kernels exports. No CUDA names
// are defined here (codegen/cuda/emulation.h does that), so a test harness can
// include this without turning `threadIdx` into a macro.
//
// A shared object built from emitted CUDA C (tests/emu/harness.h) contains
// the emulator runtime (libkiln_cuda_emu.a, linked with its symbols hidden)
// and exports two functions:
//   kiln_emu_kernels(&count) -> its kernels (KernelEntry, one per kernel);
//   kiln_emu_run(entry, grid, block, shared_bytes, buffers, scalars, report)
//     -> runs one launch; 0, or an ErrorKind with its message in `report`.
// Exceptions never cross the boundary: the runtime catches its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln::emu {

// What went wrong in an emulated launch. Every kind but Launch is a bug of
// the kernel (the emitter's or the schedule's) that a GPU would not report.
enum class ErrorKind : int {
  None = 0,
  Launch = 1,         // impossible launch: block too large, argument count, ...
  Divergence = 2,     // threads of a block reach different barriers, or exit while others wait
  Race = 3,           // two threads touch one shared element in one barrier interval
  Uninitialized = 4,  // a read of shared memory no thread of the block wrote
  OutOfBounds = 5,    // a shared array indexed outside its size
  Warp = 6,           // a warp collective (shuffle, vote) the named lanes did not all reach
};

inline const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::None:
      return "none";
    case ErrorKind::Launch:
      return "launch";
    case ErrorKind::Divergence:
      return "divergence";
    case ErrorKind::Race:
      return "race";
    case ErrorKind::Uninitialized:
      return "uninitialized";
    case ErrorKind::OutOfBounds:
      return "out-of-bounds";
    case ErrorKind::Warp:
      return "warp";
  }
  return "unknown";
}

// Thrown by kiln::emu::launch (and by the harness for a kiln_emu_run report).
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// One parameter of a kernel in the CUDA calling convention: a buffer (a
// typed pointer; elem_size bytes per element) or a 64-bit scalar slot.
struct ParamInfo {
  bool pointer;
  bool floating;       // pointee (or scalar) is a floating type
  unsigned elem_size;  // sizeof(*p) for a pointer, sizeof(scalar) otherwise
};

// One kernel of a shared object. `invoke` runs the body of ONE CUDA thread
// with the arguments unpacked from the calling convention's arrays (buffers
// in order of the pointer parameters, scalars of the others); the runtime
// calls it once per thread, on that thread's fiber.
struct KernelEntry {
  int program;            // which program of the batch (the harness's numbering)
  const char* name;       // the kernel's name in its program
  unsigned launch_bound;  // __launch_bounds__ of the source, 0 when none was given
  unsigned num_params;
  const ParamInfo* params;
  void (*invoke)(void* const* buffers, const int64_t* scalars);
};

// The largest report kiln_emu_run writes (longer ones are cut).
inline constexpr size_t kReportCapacity = 4096;

// kiln_emu_kernels, exported by every shared object the harness builds (the
// generated source defines it with KILN_EMU_EXPORTS).
using KilnEmuKernelsFn = const KernelEntry* (*)(size_t* count);
// kiln_emu_run: runs one launch of `entry`; returns 0 or the ErrorKind, with
// the message (NUL-terminated, at most kReportCapacity bytes) in `report`.
using KilnEmuRunFn = int (*)(const KernelEntry* entry, const unsigned grid[3],
                             const unsigned block[3], size_t shared_bytes, void* const* buffers,
                             size_t num_buffers, const int64_t* scalars, size_t num_scalars,
                             char* report);

}  // namespace kiln::emu
