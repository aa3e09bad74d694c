// The emulator's scheduler: a launch runs its blocks one after another, and a
// block runs each of its CUDA threads as a fiber (a stack of its own and a
// context switch, context.h). Why fibers: the emitted text is compiled as is, so a thread must
// be able to stop in the middle of its code at a __syncthreads() or a
// shuffle and resume later; a fiber does that without rewriting the kernel,
// and running the fibers one at a time in a fixed order makes every run, and
// every report, the same.
//
// A block's loop: run the runnable threads in linear-id order, each until it
// blocks (barrier or warp collective) or exits; then complete the warp
// collectives whose lanes have all arrived; when none can, every live thread
// must wait at one barrier (the same call site), which then opens (the epoch
// advances). Anything else is divergence, reported with the call sites.
//
// On an error the block's started fibers are resumed with `stopping` set, so
// each unwinds (an exception on its own stack, caught at its entry) and its
// stack is clean for reuse; then the launch throws kiln::emu::Error.
//
// Under AddressSanitizer every switch is announced with
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, so ASan
// knows which stack is current and checks kernel frames on fiber stacks.
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "codegen/cuda/emulation/state.h"

#if defined(__SANITIZE_ADDRESS__)
#define KILN_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_EMU_ASAN 1
#endif
#endif
#ifdef KILN_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace kiln::emu::detail {

namespace {

// Unwinds a fiber: thrown on its own stack, caught at its entry.
struct Stop {};

thread_local Launch* tls_launch = nullptr;
thread_local Coords tls_coords{};

// Bytes at the top of a fresh fiber stack filled with 0xFF (NaN in every float
// format) so that a kernel's uninitialized locals do not silently inherit the
// previous thread's values (at -O1 most locals live in registers, so this
// catches only some).
constexpr size_t kStackPoison = 8 * 1024;

size_t stack_bytes() {
  static const size_t bytes = [] {
    size_t kib = 256;
    if (const char* env = std::getenv("KILN_EMU_STACK_KB")) {
      const long v = std::strtol(env, nullptr, 10);
      if (v >= 64) kib = static_cast<size_t>(v);
    }
    return kib * 1024;
  }();
  return bytes;
}

// Fiber stacks, kept for the next block (a block's threads that run to the
// end one after another reuse one stack). Each has a PROT_NONE guard page
// below it, so an overflow faults instead of corrupting a neighbour.
class StackPool {
 public:
  ~StackPool() {
    for (const Stack& s : free_) munmap(s.base - page(), s.size + page());
  }
  Stack get() {
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      return s;
    }
    const size_t size = stack_bytes();
    void* p = mmap(nullptr, size + page(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw Error(ErrorKind::Launch, "kiln-emu: out of memory for fiber stacks");
    mprotect(p, page(), PROT_NONE);
    return Stack{static_cast<char*>(p) + page(), size};
  }
  void put(Stack s) { free_.push_back(s); }

 private:
  static size_t page() { return 4096; }
  std::vector<Stack> free_;
};

thread_local StackPool tls_stacks;

void start_switch(void** fake_stack_save, const void* bottom, size_t size) {
#ifdef KILN_EMU_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}

void finish_switch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
#ifdef KILN_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

// The first code of every fiber.
void fiber_entry() {
  Launch& l = *tls_launch;
  Thread& t = *l.current;
  finish_switch(nullptr, &l.scheduler_bottom, &l.scheduler_size);
  try {
    if (!l.stopping) l.body(l.ctx);
  } catch (const Stop&) {
    // Unwound after an error; the launch reports it.
  } catch (const std::exception& e) {
    l.set_error(ErrorKind::Launch, l.where() + l.thread_name(t) + " threw: " + e.what());
  } catch (...) {
    l.set_error(ErrorKind::Launch, l.where() + l.thread_name(t) + " threw an exception");
  }
  t.state = ThreadState::Done;
  // nullptr: this fiber is finished, ASan may drop its fake stack.
  start_switch(nullptr, l.scheduler_bottom, l.scheduler_size);
  context_switch(t.ctx, l.scheduler);
  std::abort();  // a finished fiber is never resumed
}

// Runs `t` until it blocks or exits.
void resume(Launch& l, Thread& t) {
  if (t.state == ThreadState::NotStarted) {
    t.stack = tls_stacks.get();
    char* top = t.stack.base + t.stack.size;
#ifdef KILN_EMU_ASAN
    __asan_unpoison_memory_region(top - kStackPoison, kStackPoison);
#endif
    std::memset(top - kStackPoison, 0xFF, kStackPoison);
    context_init(t.ctx, t.stack.base, t.stack.size, &fiber_entry);
  }
  t.state = ThreadState::Runnable;
  l.current = &t;
  tls_coords.thread_idx = t.idx;
  start_switch(&l.scheduler_fake_stack, t.stack.base, t.stack.size);
  context_switch(l.scheduler, t.ctx);
  finish_switch(l.scheduler_fake_stack, nullptr, nullptr);
  l.current = nullptr;
  if (t.state == ThreadState::Done && t.stack.base != nullptr) {
    tls_stacks.put(t.stack);
    t.stack = Stack{};
  }
}

// After an error: unwind every fiber that has started and not finished.
void stop_block(Launch& l) {
  l.stopping = true;
  for (Thread& t : l.threads) {
    if (t.state != ThreadState::NotStarted && t.state != ThreadState::Done) resume(l, t);
  }
  l.stopping = false;
}

// The end of a barrier interval (a barrier opens, or the block ends).
void end_interval(Launch& l) {
  if (!l.unwritten_read.empty()) l.set_error(ErrorKind::Uninitialized, l.unwritten_read);
  l.unwritten_read.clear();
}

// Every live thread waits at a barrier: opens it, or reports divergence.
void open_barrier(Launch& l) {
  std::vector<unsigned> exited;
  std::vector<std::pair<Site, std::vector<unsigned>>> sites;  // in order of first thread
  for (const Thread& t : l.threads) {
    if (t.state == ThreadState::Done) {
      exited.push_back(t.linear);
      continue;
    }
    auto same = [&](const auto& s) {
      return s.first.line == t.wait.line && std::strcmp(s.first.file, t.wait.file) == 0;
    };
    auto it = std::find_if(sites.begin(), sites.end(), same);
    if (it == sites.end()) {
      sites.push_back({t.wait, {}});
      it = sites.end() - 1;
    }
    it->second.push_back(t.linear);
  }
  if (sites.size() > 1 || !exited.empty()) {
    std::ostringstream os;
    os << l.where() << "divergent __syncthreads(): ";
    for (size_t i = 0; i < sites.size(); ++i) {
      os << (i ? "; " : "") << "threads " << l.ranges(sites[i].second) << " wait at the barrier at "
         << site_str(sites[i].first);
    }
    if (!exited.empty()) {
      os << "; threads " << l.ranges(exited) << " exited without reaching "
         << (sites.size() > 1 ? "them" : "it");
    }
    os << " (every thread of a block must reach the same __syncthreads())";
    l.set_error(ErrorKind::Divergence, os.str());
    return;
  }
  end_interval(l);
  if (l.error != ErrorKind::None) return;
  ++l.epoch;
  for (Thread& t : l.threads) {
    t.phase = t.wait;
    t.state = ThreadState::Runnable;
  }
}

void run_block(Launch& l) {
  const dim3 b = l.spec.block;
  l.threads.assign(size_t{b.x} * b.y * b.z, Thread{});
  unsigned linear = 0;
  for (unsigned z = 0; z < b.z; ++z) {
    for (unsigned y = 0; y < b.y; ++y) {
      for (unsigned x = 0; x < b.x; ++x) {
        Thread& t = l.threads[linear];
        t.idx = ::uint3{x, y, z};
        t.linear = linear++;
      }
    }
  }
  l.epoch = 0;
  l.unwritten_read.clear();
  while (l.error == ErrorKind::None) {
    for (Thread& t : l.threads) {
      if (t.state == ThreadState::NotStarted || t.state == ThreadState::Runnable) resume(l, t);
      if (l.error != ErrorKind::None) break;
    }
    if (l.error != ErrorKind::None) break;
    if (std::all_of(l.threads.begin(), l.threads.end(),
                    [](const Thread& t) { return t.state == ThreadState::Done; })) {
      end_interval(l);
      break;
    }
    if (resolve_warp_collectives(l) || l.error != ErrorKind::None) continue;
    if (std::any_of(l.threads.begin(), l.threads.end(),
                    [](const Thread& t) { return t.state == ThreadState::AtWarp; })) {
      report_stuck_collective(l);
      break;
    }
    open_barrier(l);
  }
  if (l.error != ErrorKind::None) stop_block(l);
  release_shared(l);
}

void check_launch(const Launch& l) {
  const dim3 g = l.spec.grid, b = l.spec.block;
  const uint64_t threads = uint64_t{b.x} * b.y * b.z;
  std::ostringstream os;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0) {
    os << "an empty grid or block";
  } else if (b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024) {
    os << "a block of " << threads << " threads (" << b.x << ", " << b.y << ", " << b.z
       << "); CUDA allows at most 1024 (x, y <= 1024, z <= 64)";
  } else if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    os << "a grid of (" << g.x << ", " << g.y << ", " << g.z
       << "); CUDA allows x < 2^31, y and z <= 65535";
  } else if (l.spec.launch_bound != 0 && threads > l.spec.launch_bound) {
    os << "a block of " << threads << " threads, more than its __launch_bounds__("
       << l.spec.launch_bound << ")";
  } else if (l.spec.shared_bytes > kSharedLimit) {
    os << l.spec.shared_bytes << " bytes of dynamic shared memory; a block has " << kSharedLimit
       << " without opting in";
  } else {
    return;
  }
  throw Error(ErrorKind::Launch, "kiln-emu: kernel '" + l.kernel + "' launched with " + os.str());
}

struct EntryCall {
  const KernelEntry* entry;
  void* const* buffers;
  const int64_t* scalars;
  static void run(void* self) {
    const EntryCall* c = static_cast<const EntryCall*>(self);
    c->entry->invoke(c->buffers, c->scalars);
  }
};

}  // namespace

std::string site_str(Site s) {
  if (s.file == nullptr) return "(unknown)";
  return std::string(s.file) + ":" + std::to_string(s.line);
}

void Launch::set_error(ErrorKind kind, std::string text) {
  if (error != ErrorKind::None) return;
  error = kind;
  message = std::move(text);
}

std::string Launch::where() const {
  std::ostringstream os;
  os << "kiln-emu: kernel '" << kernel << "' block (" << block_idx.x << ", " << block_idx.y << ", "
     << block_idx.z << "): ";
  return os.str();
}

std::string Launch::thread_name(const Thread& t) const {
  if (spec.block.y == 1 && spec.block.z == 1) return "thread " + std::to_string(t.idx.x);
  std::ostringstream os;
  os << "thread (" << t.idx.x << ", " << t.idx.y << ", " << t.idx.z << ")";
  return os.str();
}

std::string Launch::ranges(const std::vector<unsigned>& ids) const {
  std::ostringstream os;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    os << (i ? ", " : "") << ids[i];
    if (j > i) os << "-" << ids[j];
    i = j + 1;
  }
  if (spec.block.y != 1 || spec.block.z != 1) os << " (linear ids)";
  return os.str();
}

Launch& running_launch(const char* what) {
  Launch* l = tls_launch;
  if (l == nullptr || l->current == nullptr) {
    throw Error(ErrorKind::Launch,
                std::string("kiln-emu: ") + what + " used outside an emulated kernel launch");
  }
  return *l;
}

void fail(ErrorKind kind, std::string message) {
  Launch* l = tls_launch;
  if (l == nullptr || l->current == nullptr) throw Error(kind, message);
  l->set_error(kind, std::move(message));
  throw Stop{};
}

void block_current(Launch& l) {
  Thread& t = *l.current;
  start_switch(&t.fake_stack, l.scheduler_bottom, l.scheduler_size);
  context_switch(t.ctx, l.scheduler);
  finish_switch(t.fake_stack, &l.scheduler_bottom, &l.scheduler_size);
  if (l.stopping) throw Stop{};
}

const Coords& coords() {
  running_launch("threadIdx/blockIdx/blockDim/gridDim");
  return tls_coords;
}

void syncthreads(const char* file, int line) {
  Launch& l = running_launch("__syncthreads()");
  Thread& t = *l.current;
  t.wait = Site{file, line};
  t.state = ThreadState::AtBarrier;
  block_current(l);
}

const char* symbol_name(const void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) != 0 && info.dli_sname != nullptr) return info.dli_sname;
  return nullptr;
}

void launch_erased(const LaunchSpec& spec, void (*body)(void*), void* ctx) {
  if (tls_launch != nullptr) {
    throw Error(ErrorKind::Launch, "kiln-emu: a kernel launched from inside an emulated kernel");
  }
  Launch l;
  l.spec = spec;
  l.kernel = spec.kernel_name != nullptr ? spec.kernel_name : "(unnamed)";
  l.body = body;
  l.ctx = ctx;
  check_launch(l);
  tls_launch = &l;
  // Reset however the launch ends (a fiber stack that cannot be mapped throws).
  struct Running {
    ~Running() { tls_launch = nullptr; }
  } running;
  tls_coords.block_dim = spec.block;
  tls_coords.grid_dim = spec.grid;
  for (unsigned z = 0; z < spec.grid.z && l.error == ErrorKind::None; ++z) {
    for (unsigned y = 0; y < spec.grid.y && l.error == ErrorKind::None; ++y) {
      for (unsigned x = 0; x < spec.grid.x && l.error == ErrorKind::None; ++x) {
        l.block_idx = ::uint3{x, y, z};
        tls_coords.block_idx = l.block_idx;
        run_block(l);
      }
    }
  }
  if (l.error != ErrorKind::None) throw Error(l.error, l.message);
}

int run_entry(const KernelEntry* entry, const unsigned grid[3], const unsigned block[3],
              size_t shared_bytes, void* const* buffers, size_t num_buffers, const int64_t* scalars,
              size_t num_scalars, char* report) {
  report[0] = '\0';
  auto write_report = [&](const std::string& text) {
    std::snprintf(report, kReportCapacity, "%s", text.c_str());
  };
  try {
    size_t pointers = 0;
    for (unsigned i = 0; i < entry->num_params; ++i) pointers += entry->params[i].pointer ? 1 : 0;
    const size_t others = entry->num_params - pointers;
    if (pointers != num_buffers || others != num_scalars) {
      std::ostringstream os;
      os << "kiln-emu: kernel '" << entry->name << "' takes " << pointers << " buffers and "
         << others << " scalars; the launch passed " << num_buffers << " and " << num_scalars;
      throw Error(ErrorKind::Launch, os.str());
    }
    EntryCall call{entry, buffers, scalars};
    launch_erased(LaunchSpec{entry->name, dim3(grid[0], grid[1], grid[2]),
                             dim3(block[0], block[1], block[2]), shared_bytes, entry->launch_bound},
                  &EntryCall::run, &call);
    return 0;
  } catch (const Error& e) {
    write_report(e.what());
    return static_cast<int>(e.kind());
  } catch (const std::exception& e) {
    write_report(std::string("kiln-emu: ") + e.what());
    return static_cast<int>(ErrorKind::Launch);
  }
}

}  // namespace kiln::emu::detail
