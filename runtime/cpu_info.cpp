// Host CPU description (see cpu_info.h). Cache sizes come from
// /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}; a missing or
// unreadable entry keeps the default of CpuInfo.
#include "runtime/cpu_info.h"

#include <cstdlib>
#include <fstream>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <sstream>
#include <thread>

namespace kiln::runtime {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (f) std::getline(f, s);
  return s;
}

// "48K", "1024K", "32M" -> bytes; 0 when unreadable.
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (v <= 0) return 0;
  int64_t mult = 1;
  if (end && (*end == 'K' || *end == 'k')) mult = 1 << 10;
  if (end && (*end == 'M' || *end == 'm')) mult = 1 << 20;
  if (end && (*end == 'G' || *end == 'g')) mult = int64_t(1) << 30;
  return int64_t(v) * mult;
}

void read_caches(CpuInfo& c) {
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) break;
    std::string type = read_line(dir + "type");
    int64_t size = parse_size(read_line(dir + "size"));
    if (size <= 0) continue;
    if (level == "1" && (type == "Data" || type == "Unified")) c.l1d_bytes = size;
    if (level == "2") c.l2_bytes = size;
    if (level == "3") c.l3_bytes = size;
  }
}

std::string kib(int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  return std::to_string(bytes >> 10) + "K";
}

}  // namespace

std::string CpuInfo::str() const {
  std::ostringstream s;
  const std::pair<const char*, bool> feats[] = {
      {"avx512f", avx512f},         {"avx512bw", avx512bw},       {"avx512vl", avx512vl},
      {"avx512_bf16", avx512_bf16}, {"avx512_fp16", avx512_fp16}, {"avx2", avx2},
      {"fma", fma},                 {"avx", avx},                 {"f16c", f16c},
      {"avx_vnni", avx_vnni},       {"sse2", sse2}};
  for (const auto& [name, on] : feats) {
    if (on) s << name << " ";
  }
  s << "l1d " << kib(l1d_bytes) << " l2 " << kib(l2_bytes) << " l3 " << kib(l3_bytes) << " cores "
    << cores;
  return s.str();
}

const CpuInfo& host_cpu_info() {
  static const CpuInfo info = [] {
    CpuInfo c;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    c.sse2 = __builtin_cpu_supports("sse2");
    c.avx = __builtin_cpu_supports("avx");
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    // The newer extensions are read from CPUID directly: their
    // __builtin_cpu_supports names differ between GCC 12 and clang 14 (the
    // fuzz build), and some are missing from either. The OS-enabled register
    // state is already implied by avx/avx512f above.
    unsigned a = 0, b = 0, cx = 0, d = 0;
    if (__get_cpuid(1, &a, &b, &cx, &d)) c.f16c = c.avx && (cx & (1u << 29));
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) c.avx512_fp16 = c.avx512f && (d & (1u << 23));
    if (__get_cpuid_count(7, 1, &a, &b, &cx, &d)) {
      c.avx_vnni = c.avx2 && (a & (1u << 4));
      c.avx512_bf16 = c.avx512f && (a & (1u << 5));
    }
#endif
    read_caches(c);
    unsigned hw = std::thread::hardware_concurrency();
    c.cores = hw ? int(hw) : 1;
    return c;
  }();
  return info;
}

}  // namespace kiln::runtime
