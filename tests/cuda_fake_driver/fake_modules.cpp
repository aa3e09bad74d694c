// The fake CUDA driver's kernels (host functions run for launches), module
// images (its own text format, or a CUBIN whose functions only log their
// launches) and device attributes; see fake_driver.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tests/cuda_fake_driver/fake_state.h"

namespace kiln_fake {

float f32_of(uint64_t slot) {
  uint32_t bits = uint32_t(slot);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int64_t covered(const Geometry& g, int64_t n) {
  return std::max<int64_t>(0, std::min<int64_t>(n, int64_t(g.grid[0]) * g.block[0]));
}

CUresult saxpy(State& s, const Geometry& g, const std::vector<uint64_t>& p) {
  const int64_t m = covered(g, int64_t(p[3]));
  const size_t bytes = size_t(m) * sizeof(float);
  for (int i = 0; i < 3; ++i) {
    if (!find_range(s, p[size_t(i)], bytes)) return kIllegalAddress;
  }
  const auto* x = reinterpret_cast<const float*>(uintptr_t(p[0]));
  const auto* y = reinterpret_cast<const float*>(uintptr_t(p[1]));
  auto* out = reinterpret_cast<float*>(uintptr_t(p[2]));
  const float a = f32_of(p[4]);
  for (int64_t i = 0; i < m; ++i) out[i] = a * x[i] + y[i];
  return kOk;
}

CUresult scale_f64(State& s, const Geometry& g, const std::vector<uint64_t>& p) {
  const int64_t m = covered(g, int64_t(p[2]));
  const size_t bytes = size_t(m) * sizeof(float);
  if (!find_range(s, p[0], bytes) || !find_range(s, p[1], bytes)) return kIllegalAddress;
  double scale;
  std::memcpy(&scale, &p[3], 8);
  const auto* x = reinterpret_cast<const float*>(uintptr_t(p[0]));
  auto* out = reinterpret_cast<float*>(uintptr_t(p[1]));
  for (int64_t i = 0; i < m; ++i) out[i] = float(double(x[i]) * scale);
  return kOk;
}

CUresult record(State&, const Geometry&, const std::vector<uint64_t>&) {
  return kOk;
}

CUresult fault(State&, const Geometry&, const std::vector<uint64_t>&) {
  return kIllegalAddress;
}

constexpr BuiltinInfo kBuiltins[] = {
    {"saxpy", saxpy, 5},
    {"scale_f64", scale_f64, 4},
    {"record", record, 0},
    {"fault", fault, 0},
};

const BuiltinInfo* find_builtin(const std::string& name) {
  for (const BuiltinInfo& b : kBuiltins) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

template <typename T>
T read_at(const unsigned char* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

// A CUBIN (a 64-bit ELF, as NVRTC makes for Kiln's cuda backend): each
// section ".text.<name>" is a function <name>, run as `record` (the fake
// cannot execute SASS) with the parameter count the launch passes unchecked
// (nparams -1), so a compiled function's launches reach the log.
std::unique_ptr<Module> parse_cubin(const unsigned char* elf) {
  if (elf[4] != 2) return nullptr;  // ELFCLASS64
  const auto shoff = read_at<uint64_t>(elf, 0x28);
  const auto shentsize = read_at<uint16_t>(elf, 0x3a);
  const auto shnum = read_at<uint16_t>(elf, 0x3c);
  const auto shstrndx = read_at<uint16_t>(elf, 0x3e);
  if (shentsize < 0x28 || shstrndx >= shnum) return nullptr;
  auto section = [&](size_t i) { return elf + shoff + i * shentsize; };
  const uint64_t names = read_at<uint64_t>(section(shstrndx), 0x18);
  auto m = std::make_unique<Module>();
  for (size_t i = 0; i < shnum; ++i) {
    const char* name =
        reinterpret_cast<const char*>(elf + names + read_at<uint32_t>(section(i), 0));
    if (std::strncmp(name, ".text.", 6) != 0) continue;
    auto f = std::make_unique<Function>();
    f->name = name + 6;
    f->builtin = "record";
    f->nparams = -1;
    f->max_dynamic_shared = kSharedPerBlock;
    f->module = m.get();
    m->functions.push_back(std::move(f));
  }
  return m;
}

// Parses an image; null when it is not one.
std::unique_ptr<Module> parse_module(const char* text) {
  if (std::memcmp(text, "\x7f" "ELF", 4) == 0) {
    return parse_cubin(reinterpret_cast<const unsigned char*>(text));
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "kiln-fake-cuda-module") return nullptr;
  auto m = std::make_unique<Module>();
  while (std::getline(in, line)) {
    std::istringstream words(line);
    auto f = std::make_unique<Function>();
    if (!(words >> f->name)) continue;  // blank line
    if (!(words >> f->builtin >> f->nparams)) return nullptr;
    const BuiltinInfo* b = find_builtin(f->builtin);
    if (!b || f->nparams < b->min_params || f->nparams > 64) return nullptr;
    std::string option;
    while (words >> option) {
      size_t eq = option.find('=');
      if (eq == std::string::npos) return nullptr;
      std::string key = option.substr(0, eq);
      int value = std::atoi(option.c_str() + eq + 1);
      if (key == "max_threads") {
        f->max_threads = value;
      } else if (key == "static_shared") {
        f->static_shared = value;
      } else if (key == "regs") {
        f->regs = value;
      } else if (key == "local") {
        f->local = value;
      } else {
        return nullptr;
      }
    }
    f->max_dynamic_shared = kSharedPerBlock - f->static_shared;
    f->module = m.get();
    m->functions.push_back(std::move(f));
  }
  return m;
}

int device_attribute(int attribute) {
  switch (attribute) {
    case 1:
      return 1024;  // max threads per block
    case 2:
    case 3:
    case 4:
      return kMaxBlock[attribute - 2];
    case 5:
    case 6:
    case 7:
      return kMaxGrid[attribute - 5];
    case 8:
      return kSharedPerBlock;  // shared memory per block
    case 9:
      return 65536;  // constant memory
    case 10:
      return 32;  // warp size
    case 12:
      return 65536;  // registers per block
    case 13:
      return 1980000;  // clock (kHz)
    case 16:
      return 132;  // SMs
    case 36:
      return 2619000;  // memory clock (kHz)
    case 37:
      return 5120;  // memory bus width
    case 38:
      return 50 << 20;  // L2
    case 39:
      return 2048;  // threads per SM
    case 41:
      return 1;  // unified addressing
    case 75:
      return 9;  // compute capability
    case 76:
      return 0;
    case 81:
      return 228 << 10;  // shared memory per SM
    case 82:
      return 65536;  // registers per SM
    case 97:
      return kSharedOptin;  // shared memory per block, opted in
    default:
      return -1;
  }
}

}  // namespace kiln_fake
