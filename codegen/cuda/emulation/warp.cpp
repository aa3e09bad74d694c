// Warp collectives of the emulator (__shfl*_sync, __ballot_sync, __any_sync,
// __all_sync, and the tensor-core product of the prelude's kiln_mma_sync_*)
// in lock step: a lane that reaches one records its operands and
// blocks; when every lane named in the mask waits at a collective with that
// same mask, the scheduler computes all the results at once (PTX's shfl.sync
// rules, including `width` segments and out-of-range sources returning the
// lane's own value) and lets the lanes go on. A lane named in the mask that
// exits, waits at a barrier, or never arrives is reported (ErrorKind::Warp):
// on a GPU that is undefined behaviour, often a hang.
//
// Lanes are numbered by linear thread id (x fastest), warps of 32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string_view>

#include "codegen/cuda/emulation/state.h"

namespace kiln::emu::detail {

namespace {

constexpr unsigned kWarp = 32;

std::string hex(unsigned v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

// Where thread `t` is, for a message about a collective it did not join.
std::string state_str(const Thread& t) {
  switch (t.state) {
    case ThreadState::Done:
      return "exited";
    case ThreadState::AtBarrier:
      return "waits at __syncthreads() at " + site_str(t.wait);
    case ThreadState::AtWarp:
      return std::string("waits at ") + warp_op_name(t.warp.op) + " at " + site_str(t.wait) +
             " with mask " + hex(t.warp.mask);
    case ThreadState::NotStarted:
    case ThreadState::Runnable:
      return "is still running";
  }
  return "?";
}

bool same_site(Site a, Site b) {
  return a.line == b.line && std::string_view(a.file) == std::string_view(b.file);
}

// The source lane of `lane` for a shuffle, by PTX's shfl.sync definition
// (the c operand CUDA's intrinsics pass: segment mask from `width`, clamp
// 31 except for up, whose clamp is 0); `lane` itself when out of range.
unsigned shuffle_source(WarpOp op, unsigned lane, int arg, int width) {
  const unsigned segmask = (kWarp - static_cast<unsigned>(width)) & 0x1f;
  const unsigned b = static_cast<unsigned>(arg) & 0x1f;
  const unsigned clamp = op == WarpOp::ShflUp ? 0 : 0x1f;
  const int max_lane = static_cast<int>((lane & segmask) | (clamp & ~segmask));
  const int min_lane = static_cast<int>(lane & segmask);
  int j = 0;
  bool in_range = false;
  switch (op) {
    case WarpOp::ShflUp:
      j = static_cast<int>(lane) - static_cast<int>(b);
      in_range = j >= max_lane;
      break;
    case WarpOp::ShflDown:
      j = static_cast<int>(lane + b);
      in_range = j <= max_lane;
      break;
    case WarpOp::ShflXor:
      j = static_cast<int>(lane ^ b);
      in_range = j <= max_lane;
      break;
    default:
      j = min_lane | static_cast<int>(b & ~segmask);
      in_range = j <= max_lane;
      break;
  }
  return in_range ? static_cast<unsigned>(j) : lane;
}

// One lane's operands of mma.sync, on its fiber's stack while it waits.
struct MmaLane {
  const uint32_t* a;  // 4 registers of A's fragment
  const uint32_t* b;  // 2 of B's
  float* c;           // 4 accumulators
};

float f16_bits_to_float(uint32_t h) {
  const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
  const int exp = static_cast<int>((h >> 10) & 0x1fu);
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? std::nanf("") : sign * HUGE_VALF;
  return sign * std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
}

float bf16_bits_to_float(uint32_t h) {
  const uint32_t bits = h << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: gathers A (16x16) and B
// (16x8) from the 32 lanes' fragments by PTX's layout (g = lane / 4, q =
// lane % 4; A register r of a lane holds row g + 8 * (r % 2), columns
// 2q + 8 * (r / 2) and the next; B register r column g, rows 2q + 8r and the
// next; accumulator r row g + 8 * (r / 2), column 2q + r % 2; the lower
// index in the low half), and gives every lane its part of C + A * B. Each
// sum runs over k in order in f32, as the loop evaluator computes it.
void complete_mma(Launch& l, unsigned base, bool bf16) {
  float A[16][16], B[16][8], C[16][8];
  auto half = [&](uint32_t reg, int hi) {
    const uint32_t bits = hi ? reg >> 16 : reg & 0xffffu;
    return bf16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
  };
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    const MmaLane& m = *reinterpret_cast<const MmaLane*>(l.threads[base + lane].warp.value);
    const unsigned g = lane / 4, q = lane % 4;
    for (unsigned r = 0; r < 4; ++r) {
      for (int h = 0; h < 2; ++h) {
        A[g + 8 * (r % 2)][2 * q + 8 * (r / 2) + unsigned(h)] = half(m.a[r], h);
        C[g + 8 * (r / 2)][2 * q + r % 2] = m.c[r];
      }
    }
    for (unsigned r = 0; r < 2; ++r) {
      for (int h = 0; h < 2; ++h) B[2 * q + 8 * r + unsigned(h)][g] = half(m.b[r], h);
    }
  }
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    const MmaLane& m = *reinterpret_cast<const MmaLane*>(l.threads[base + lane].warp.value);
    const unsigned g = lane / 4, q = lane % 4;
    for (unsigned r = 0; r < 4; ++r) {
      const unsigned row = g + 8 * (r / 2), col = 2 * q + r % 2;
      float sum = C[row][col];
      for (unsigned k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      m.c[r] = sum;
    }
  }
}

// Completes the collective of the lanes in `mask` of the warp at `base`
// (all of them wait at it). False when it is malformed (the error is set).
bool complete(Launch& l, unsigned base, unsigned mask) {
  Thread& first = l.threads[base + static_cast<unsigned>(__builtin_ctz(mask))];
  const WarpCall& call = first.warp;
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1)) continue;
    const Thread& t = l.threads[base + lane];
    if (t.warp.op != call.op || !same_site(t.wait, first.wait)) {
      l.set_error(ErrorKind::Warp, l.where() + "lanes named in mask " + hex(mask) +
                                       " reach different collectives: " + l.thread_name(first) +
                                       " " + state_str(first) + ", " + l.thread_name(t) + " " +
                                       state_str(t));
      return false;
    }
    const int w = t.warp.width;
    if (w < 1 || w > 32 || (w & (w - 1)) != 0) {
      l.set_error(ErrorKind::Warp, l.where() + l.thread_name(t) + " calls " +
                                       warp_op_name(t.warp.op) + " at " + site_str(t.wait) +
                                       " with width " + std::to_string(w) +
                                       " (a power of two up to 32)");
      return false;
    }
  }
  if (call.op == WarpOp::MmaF16 || call.op == WarpOp::MmaBf16) {
    complete_mma(l, base, call.op == WarpOp::MmaBf16);
    for (unsigned lane = 0; lane < kWarp; ++lane) l.threads[base + lane].state = ThreadState::Runnable;
    return true;
  }
  uint64_t ballot = 0;
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    if (mask >> lane & 1) ballot |= (l.threads[base + lane].warp.value != 0 ? 1u : 0u) << lane;
  }
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1)) continue;
    Thread& t = l.threads[base + lane];
    switch (call.op) {
      case WarpOp::Ballot:
        t.warp.result = ballot;
        break;
      case WarpOp::Any:
        t.warp.result = ballot != 0 ? 1 : 0;
        break;
      case WarpOp::All:
        t.warp.result = ballot == mask ? 1 : 0;
        break;
      default: {
        const unsigned src = shuffle_source(call.op, lane, t.warp.arg, t.warp.width);
        if (!(mask >> src & 1)) {
          l.set_error(ErrorKind::Warp, l.where() + l.thread_name(t) + " (lane " +
                                           std::to_string(lane) + ") reads lane " +
                                           std::to_string(src) + " in " + warp_op_name(call.op) +
                                           " at " + site_str(t.wait) + ", but mask " + hex(mask) +
                                           " does not name that lane (its value is undefined)");
          return false;
        }
        t.warp.result = l.threads[base + src].warp.value;
        break;
      }
    }
  }
  for (unsigned lane = 0; lane < kWarp; ++lane) {
    if (mask >> lane & 1) l.threads[base + lane].state = ThreadState::Runnable;
  }
  return true;
}

}  // namespace

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::ShflIdx:
      return "__shfl_sync";
    case WarpOp::ShflUp:
      return "__shfl_up_sync";
    case WarpOp::ShflDown:
      return "__shfl_down_sync";
    case WarpOp::ShflXor:
      return "__shfl_xor_sync";
    case WarpOp::Ballot:
      return "__ballot_sync";
    case WarpOp::Any:
      return "__any_sync";
    case WarpOp::All:
      return "__all_sync";
    case WarpOp::MmaF16:
      return "mma.sync.m16n8k16 (f16)";
    case WarpOp::MmaBf16:
      return "mma.sync.m16n8k16 (bf16)";
  }
  return "?";
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width,
                         const char* file, int line) {
  Launch& l = running_launch(warp_op_name(op));
  Thread& t = *l.current;
  const unsigned lane = t.linear % kWarp;
  const unsigned base = t.linear - lane;
  const unsigned lanes = static_cast<unsigned>(std::min<size_t>(kWarp, l.threads.size() - base));
  const unsigned live = lanes == kWarp ? ~0u : (1u << lanes) - 1;
  if (!(mask >> lane & 1)) {
    fail(ErrorKind::Warp, l.where() + l.thread_name(t) + " calls " + warp_op_name(op) + " at " +
                              site_str(Site{file, line}) + " with mask " + hex(mask) +
                              ", which does not name its own lane " + std::to_string(lane));
  }
  if ((mask & ~live) != 0) {
    fail(ErrorKind::Warp, l.where() + l.thread_name(t) + " calls " + warp_op_name(op) + " at " +
                              site_str(Site{file, line}) + " with mask " + hex(mask) +
                              ", which names lanes its warp does not have (the block has " +
                              std::to_string(l.threads.size()) +
                              " threads; this warp's lanes are " + hex(live) + ")");
  }
  t.warp = WarpCall{op, mask, arg, width, value, 0};
  t.wait = Site{file, line};
  t.state = ThreadState::AtWarp;
  block_current(l);
  return t.warp.result;
}

void warp_mma(bool bf16, float* c, const uint32_t* a, const uint32_t* b, const char* file,
              int line) {
  MmaLane lane{a, b, c};
  // Every lane of the warp (mma.sync.aligned): a block whose last warp is
  // partial is reported by warp_collective's mask check.
  warp_collective(bf16 ? WarpOp::MmaBf16 : WarpOp::MmaF16, ~0u,
                  static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&lane)), 0, 32, file, line);
}

bool resolve_warp_collectives(Launch& l) {
  bool progressed = false;
  const unsigned n = static_cast<unsigned>(l.threads.size());
  for (unsigned base = 0; base < n; base += kWarp) {
    const unsigned lanes = std::min(kWarp, n - base);
    for (unsigned lane = 0; lane < lanes; ++lane) {
      const Thread& t = l.threads[base + lane];
      if (t.state != ThreadState::AtWarp) continue;
      const unsigned mask = t.warp.mask;
      bool ready = true;
      for (unsigned other = 0; other < lanes && ready; ++other) {
        const Thread& u = l.threads[base + other];
        if (mask >> other & 1) ready = u.state == ThreadState::AtWarp && u.warp.mask == mask;
      }
      if (!ready) continue;
      if (!complete(l, base, mask)) return false;
      progressed = true;
    }
  }
  return progressed;
}

void report_stuck_collective(Launch& l) {
  const unsigned n = static_cast<unsigned>(l.threads.size());
  for (unsigned base = 0; base < n; base += kWarp) {
    const unsigned lanes = std::min(kWarp, n - base);
    for (unsigned lane = 0; lane < lanes; ++lane) {
      const Thread& t = l.threads[base + lane];
      if (t.state != ThreadState::AtWarp) continue;
      for (unsigned other = 0; other < lanes; ++other) {
        const Thread& u = l.threads[base + other];
        if (!(t.warp.mask >> other & 1)) continue;
        if (u.state == ThreadState::AtWarp && u.warp.mask == t.warp.mask) continue;
        l.set_error(ErrorKind::Warp, l.where() + l.thread_name(t) + " waits at " +
                                         warp_op_name(t.warp.op) + " at " + site_str(t.wait) +
                                         " with mask " + hex(t.warp.mask) + ", but " +
                                         l.thread_name(u) + ", named in the mask, " + state_str(u) +
                                         " (every lane of the mask must reach the collective)");
        return;
      }
    }
  }
}

}  // namespace kiln::emu::detail
