// The fake CUDA driver's state and helpers (fake_state.h).
#include "tests/cuda_fake_driver/fake_state.h"

#include <algorithm>
#include <cstring>

namespace kiln_fake {

State& state() {
  static State* s = new State;  // Kiln may call in during exit
  return *s;
}

thread_local Context* current = nullptr;

// Counts the call, then answers an armed failure, or a driver not initialized.
CUresult enter(State& s, const char* name) {
  s.calls[name]++;
  auto f = s.failures.find(name);
  if (f != s.failures.end()) {
    CUresult r = f->second;
    s.failures.erase(f);
    return r;
  }
  if (!s.initialized && std::strcmp(name, "cuInit") != 0) return kNotInitialized;
  return kOk;
}

// The live allocation holding [p, p + n), or null.
const Allocation* find_range(State& s, CUdeviceptr p, size_t n) {
  auto it = s.allocations.upper_bound(uintptr_t(p));
  if (it == s.allocations.begin()) return nullptr;
  --it;
  uintptr_t offset = uintptr_t(p) - it->first;
  if (offset > it->second.bytes || n > it->second.bytes - offset) return nullptr;
  return &it->second;
}

unsigned long long live_bytes(State& s, int device) {
  unsigned long long n = 0;
  for (auto& [p, a] : s.allocations) n += a.device == device ? a.bytes : 0;
  return n;
}

CUresult drain(Stream* stream) {
  CUresult first = kOk;
  while (!stream->work.empty()) {
    std::function<CUresult()> w = std::move(stream->work.front());
    stream->work.pop_front();
    CUresult r = w();
    if (r != kOk && first == kOk) first = r;
  }
  return first;
}

CUresult drain_all(State& s) {
  CUresult first = kOk;
  for (Stream* st : s.streams) {
    CUresult r = drain(st);
    if (r != kOk && first == kOk) first = r;
  }
  return first;
}

// Resolves a stream handle usable with the current context (null: the null stream).
CUresult use_stream(State& s, void* handle, Stream** out) {
  *out = nullptr;
  if (!handle) return kOk;
  auto* st = static_cast<Stream*>(handle);
  if (std::find(s.streams.begin(), s.streams.end(), st) == s.streams.end()) return kInvalidHandle;
  if (st->ctx != current) return kInvalidContext;
  *out = st;
  return kOk;
}

CUresult enqueue(Stream* stream, std::function<CUresult()> work) {
  if (!stream) return work();
  stream->work.push_back(std::move(work));
  return kOk;
}

}  // namespace kiln_fake
