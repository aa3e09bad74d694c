// Fault injection (see fault_injection.h). The armed name sits behind a mutex
// and a flag that says whether any is armed, so an unarmed point reads only
// the flag.
#include "runtime/fault_injection.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "kiln/error.h"

namespace kiln::runtime {

namespace {

struct Armed {
  std::atomic<bool> any{false};
  std::mutex mu;
  std::string name;  // guarded by mu

  Armed() {
    if (const char* v = std::getenv("KILN_INJECT_FAULT"); v && *v) {
      name = v;
      any.store(true, std::memory_order_relaxed);
    }
  }
};

// Built on first use (thread-safe static initialization), which reads the
// environment exactly once per process.
Armed& armed() {
  static Armed a;
  return a;
}

}  // namespace

void fault_point(const char* name) {
  Armed& a = armed();
  if (!a.any.load(std::memory_order_relaxed)) return;
  std::string armed_name;
  {
    std::lock_guard<std::mutex> lock(a.mu);
    armed_name = a.name;
  }
  if (armed_name != name) return;
  throw InternalError("internal error: injected fault at " + armed_name + " (KILN_INJECT_FAULT)");
}

std::string arm_fault_point(const std::string& name) {
  Armed& a = armed();
  std::lock_guard<std::mutex> lock(a.mu);
  std::string before = a.name;
  a.name = name;
  a.any.store(!name.empty(), std::memory_order_relaxed);
  return before;
}

}  // namespace kiln::runtime
