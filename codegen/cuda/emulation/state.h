// The emulator runtime's internal state, shared by its parts: scheduler.cpp
// (fibers, blocks, barriers, launches), warp.cpp (warp collectives),
// shared_memory.cpp (KILN_SHARED arrays and their checks); context.cpp
// switches between the fibers.
// One Launch runs at a time per OS thread; its blocks run one after another.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/emulation.h"
#include "codegen/cuda/emulation/context.h"

namespace kiln::emu::detail {

// Where a barrier or collective was called (the kernel's __FILE__:__LINE__,
// which the harness maps to the CUDA text with #line). file == nullptr: none.
struct Site {
  const char* file = nullptr;
  int line = 0;
};
std::string site_str(Site s);

enum class ThreadState : uint8_t { NotStarted, Runnable, AtBarrier, AtWarp, Done };

// A lane's part of a warp collective while it waits for the others.
struct WarpCall {
  WarpOp op = WarpOp::ShflIdx;
  unsigned mask = 0;
  int arg = 0;
  int width = 32;
  uint64_t value = 0;
  uint64_t result = 0;
};

struct Stack {
  char* base = nullptr;  // lowest usable address
  size_t size = 0;
};

// One CUDA thread of the running block.
struct Thread {
  ::uint3 idx{};
  unsigned linear = 0;
  ThreadState state = ThreadState::NotStarted;
  Site wait;   // the barrier or collective it waits at
  Site phase;  // the last barrier it passed; none before the first
  WarpCall warp;
  Context ctx;
  Stack stack;
  void* fake_stack = nullptr;  // ASan's, while switched out
};

// Per shared element: who wrote it and who read it, in which barrier
// interval (epoch + 1; 0 = never).
struct ElementAccess {
  static constexpr uint32_t kNobody = UINT32_MAX;
  uint32_t write_epoch = 0;
  uint32_t writer = kNobody;
  uint32_t read_epoch = 0;
  uint32_t reader = kNobody;        // the first reader in read_epoch
  uint32_t other_reader = kNobody;  // another one, when there was one
};

struct SharedDecl {
  std::string name;
  const char* file = nullptr;
  int line = 0;
  size_t elem_size = 0;
  size_t count = 0;
  bool integral = false;
  void* data = nullptr;  // aligned new, freed by the block
  std::vector<ElementAccess> access;
};

// The static shared memory a block may use without opting in (CUDA's default).
inline constexpr size_t kSharedLimit = 48 * 1024;

struct Launch {
  LaunchSpec spec{};
  std::string kernel;  // spec.kernel_name, or a stand-in
  void (*body)(void*) = nullptr;
  void* ctx = nullptr;

  ::uint3 block_idx{};
  std::vector<Thread> threads;
  uint32_t epoch = 0;  // barriers the block has passed
  std::vector<std::unique_ptr<SharedDecl>> shared;
  size_t shared_used = 0;
  // The first read of a never-written float element in this interval, as its
  // report; it becomes the error when the interval ends without a race.
  std::string unwritten_read;

  Thread* current = nullptr;  // the fiber running now
  Context scheduler;
  bool stopping = false;  // unwinding the block's fibers after an error

  ErrorKind error = ErrorKind::None;
  std::string message;

  // The scheduler's stack, for ASan's fiber annotations.
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  void* scheduler_fake_stack = nullptr;

  // Records the first error; the scheduler stops the launch at its next step.
  void set_error(ErrorKind kind, std::string text);
  // "kiln-emu: kernel 'k' block (x, y, z): " for messages.
  std::string where() const;
  // "thread 5" (1-D blocks) or "thread (5, 1, 0)".
  std::string thread_name(const Thread& t) const;
  // Linear thread ids as ranges: "0-99, 120".
  std::string ranges(const std::vector<unsigned>& linear_ids) const;
};

// The launch running on this OS thread and the fiber running in it; throws
// kiln::emu::Error (`what` says who asked) when called outside a kernel.
Launch& running_launch(const char* what);

// Stops the running CUDA thread with an error: records it (the first one
// wins) and unwinds the fiber; the launch then reports it. Outside a fiber it
// throws kiln::emu::Error.
[[noreturn]] void fail(ErrorKind kind, std::string message);

// Suspends the running fiber (its state already says why) until the
// scheduler resumes it.
void block_current(Launch& launch);

// warp.cpp: completes every warp collective all of whose lanes have arrived;
// false when none could complete. An impossible one becomes the launch's error.
bool resolve_warp_collectives(Launch& launch);
// warp.cpp: the launch's error for a collective that can never complete.
void report_stuck_collective(Launch& launch);
const char* warp_op_name(WarpOp op);

// shared_memory.cpp: frees the block's shared arrays.
void release_shared(Launch& launch);

}  // namespace kiln::emu::detail
