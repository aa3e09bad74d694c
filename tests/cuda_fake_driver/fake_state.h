// The fake CUDA driver's shared state (see fake_driver.cpp for what it
// models): the driver's objects, the one lock, the streams' queued work, and
// the helpers every part of the fake uses: the driver API (fake_driver.cpp),
// its kernels and module images (fake_modules.cpp), and the fake cuBLASLt and
// cuDNN (fake_cublaslt.cpp, fake_cudnn.cpp), which queue their work on the
// same streams and check device ranges against the same allocations.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/cuda_fake_driver/fake_driver.h"

namespace kiln_fake {

using CUresult = int;
using CUdeviceptr = unsigned long long;

enum : CUresult {
  kOk = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kInvalidHandle = 400,
  kNotFound = 500,
  kNotReady = 600,
  kIllegalAddress = 700,
  kLaunchOutOfResources = 701,
  kLaunchFailed = 719,
};

constexpr int kMaxDevices = 8;
constexpr unsigned long long kTotalMemory = 80ull << 30;
constexpr int kSharedPerBlock = 48 << 10;
constexpr int kSharedOptin = 227 << 10;
constexpr int kMaxGrid[3] = {2147483647, 65535, 65535};
constexpr int kMaxBlock[3] = {1024, 1024, 64};

struct Context {
  int device = 0;
};

struct Stream {
  Context* ctx = nullptr;
  unsigned flags = 0;
  std::deque<std::function<CUresult()>> work;
};

struct Event {
  Context* ctx = nullptr;
  Stream* stream = nullptr;  // where it was last recorded
  bool recorded = false, done = false;
  std::chrono::steady_clock::time_point at;
};

struct Module;
struct Function {
  Module* module = nullptr;
  std::string name, builtin;
  int nparams = 0, max_threads = 1024, static_shared = 0, regs = 32, local = 0;
  int max_dynamic_shared = kSharedPerBlock;
};

struct Module {
  Context* ctx = nullptr;
  std::vector<std::unique_ptr<Function>> functions;
};

struct Allocation {
  size_t bytes = 0;
  int device = 0;
};

struct State {
  std::mutex mu;
  bool initialized = false;
  int devices = 0;
  Context contexts[kMaxDevices];
  unsigned long long limit[kMaxDevices] = {};
  std::map<uintptr_t, Allocation> allocations;
  std::vector<Stream*> streams;
  std::set<Event*> events;
  std::set<Module*> modules;
  std::set<Function*> functions;
  std::vector<KilnFakeCudaLaunch> launches;
  std::map<std::string, int> calls;
  std::map<std::string, int> failures;
};

State& state();
// The context current on the calling thread.
extern thread_local Context* current;

// Counts the call, then answers an armed failure, or a driver not initialized.
CUresult enter(State& s, const char* name);
// The live allocation holding [p, p + n), or null.
const Allocation* find_range(State& s, CUdeviceptr p, size_t n);
unsigned long long live_bytes(State& s, int device);
// Runs a stream's queued work (every stream's), returning the first failure.
CUresult drain(Stream* stream);
CUresult drain_all(State& s);
// Resolves a stream handle usable with the current context (null: the null stream).
CUresult use_stream(State& s, void* handle, Stream** out);
// Queues `work` on `stream` (runs it now on the null stream).
CUresult enqueue(Stream* stream, std::function<CUresult()> work);

// ---- kernels and modules (fake_modules.cpp)

struct Geometry {
  unsigned grid[3], block[3];
  unsigned shared;
};

using Builtin = CUresult (*)(State&, const Geometry&, const std::vector<uint64_t>&);

using Builtin = CUresult (*)(State&, const Geometry&, const std::vector<uint64_t>&);

struct BuiltinInfo {
  const char* name;
  Builtin fn;
  int min_params;
};
const BuiltinInfo* find_builtin(const std::string& name);
// Parses an image; null when it is not one.
std::unique_ptr<Module> parse_module(const char* text);
// cuDeviceGetAttribute's answer for an H100 SXM (-1: unknown attribute).
int device_attribute(int attribute);

// ---- element values, for the fake libraries (fake_numbers.cpp)

enum class Elem { F32, F64, F16, BF16 };
size_t elem_size(Elem e);
double load_elem(Elem e, const void* base, int64_t i);
void store_elem(Elem e, void* base, int64_t i, double v);  // rounded to nearest even

}  // namespace kiln_fake

#define FAKE_ENTRY(name)                  \
  State& s = state();                     \
  std::lock_guard<std::mutex> lock(s.mu); \
  if (CUresult r_ = enter(s, name)) return r_

#define NEED_CONTEXT() \
  if (!current) return kInvalidContext

#define FAKE_API extern "C" __attribute__((visibility("default")))
