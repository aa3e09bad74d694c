// KILN_SHARED arrays of the emulator: one storage per declaration and block,
// fresh and poisoned at the block's first declaration, and the per-element
// record behind every access through SharedRef (see emulation.h): bounds,
// reads of never-written elements, and races within one barrier interval.
//
// The race rule: two accesses to one element in the same interval (no
// __syncthreads() between them, so the block's epoch is the same) by two
// different threads, at least one a write. Reads are recorded as well as
// writes, so the rule catches both orders of a read and a write whichever
// thread the sequential schedule ran first: a missing barrier is reported
// even when this schedule happened to compute the right numbers.
#include <cstring>
#include <new>
#include <sstream>

#include "codegen/cuda/emulation/state.h"

namespace kiln::emu::detail {

namespace {

constexpr size_t kSharedAlign = 16;

std::string element(const SharedDecl& d, long long index) {
  std::ostringstream os;
  os << d.name << "[" << index << "] (KILN_SHARED at " << site_str(Site{d.file, d.line}) << ")";
  return os.str();
}

std::string interval(const Thread& t) {
  if (t.phase.file == nullptr) return "before the block's first __syncthreads()";
  return "after the __syncthreads() at " + site_str(t.phase);
}

[[noreturn]] void race(const Launch& l, const Thread& t, const SharedDecl& d, long long index,
                       const char* mine, uint32_t other, const char* theirs) {
  fail(ErrorKind::Race, l.where() + "shared-memory race on " + element(d, index) + ": " +
                            l.thread_name(t) + " " + mine + " it and " +
                            l.thread_name(l.threads[other]) + " " + theirs +
                            " it in the same barrier interval (" + interval(t) +
                            "); a __syncthreads() is missing between the two accesses");
}

}  // namespace

SharedDecl* declare_shared(const char* name, size_t elem_size, size_t count, bool integral,
                           const char* file, int line, void** data) {
  Launch& l = running_launch("KILN_SHARED");
  for (const std::unique_ptr<SharedDecl>& d : l.shared) {
    if (d->line == line && std::strcmp(d->file, file) == 0 && d->name == name) {
      if (d->elem_size != elem_size || d->count != count) {
        fail(ErrorKind::Launch, l.where() + l.thread_name(*l.current) + " declares " + name +
                                    " at " + site_str(Site{file, line}) + " with " +
                                    std::to_string(count) + " elements; another thread declared " +
                                    std::to_string(d->count));
      }
      *data = d->data;
      return d.get();
    }
  }
  const size_t bytes = elem_size * count;
  const size_t padded = (bytes + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
  if (l.shared_used + padded + l.spec.shared_bytes > kSharedLimit) {
    fail(ErrorKind::Launch,
         l.where() + "KILN_SHARED " + name + " at " + site_str(Site{file, line}) + " needs " +
             std::to_string(bytes) + " bytes; with the block's other shared memory (" +
             std::to_string(l.shared_used + l.spec.shared_bytes) + " bytes) that passes the " +
             std::to_string(kSharedLimit) + " bytes a block has without opting in");
  }
  auto d = std::make_unique<SharedDecl>();
  d->name = name;
  d->file = file;
  d->line = line;
  d->elem_size = elem_size;
  d->count = count;
  d->integral = integral;
  // Exactly `bytes` (ASan then also sees an overrun), aligned as CUDA aligns shared arrays.
  d->data = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(kSharedAlign));
  std::memset(d->data, integral ? 0xBE : 0xFF, bytes);
  d->access.assign(count, ElementAccess{});
  l.shared_used += padded;
  *data = d->data;
  l.shared.push_back(std::move(d));
  return l.shared.back().get();
}

void shared_access(SharedDecl* d, long long index, bool write) {
  Launch& l = running_launch("a shared array");
  const Thread& t = *l.current;
  if (index < 0 || static_cast<unsigned long long>(index) >= d->count) {
    fail(ErrorKind::OutOfBounds, l.where() + l.thread_name(t) + (write ? " writes " : " reads ") +
                                     d->name + "[" + std::to_string(index) + "], outside its " +
                                     std::to_string(d->count) + " elements (KILN_SHARED at " +
                                     site_str(Site{d->file, d->line}) + ")");
  }
  ElementAccess& a = d->access[static_cast<size_t>(index)];
  const uint32_t now = l.epoch + 1;
  const uint32_t me = t.linear;
  if (write) {
    if (a.write_epoch == now && a.writer != me) race(l, t, *d, index, "writes", a.writer, "wrote");
    if (a.read_epoch == now && a.reader != me) race(l, t, *d, index, "writes", a.reader, "read");
    if (a.read_epoch == now && a.other_reader != ElementAccess::kNobody) {
      race(l, t, *d, index, "writes", a.other_reader, "read");
    }
    a.write_epoch = now;
    a.writer = me;
    return;
  }
  if (a.write_epoch == 0) {
    std::string what =
        l.where() + l.thread_name(t) + " reads " + element(*d, index) +
        ", which no thread of the block has written (shared memory starts undefined)";
    // A float read yields the poison (NaN) and is reported at the end of the
    // interval, so that a write by another thread later in it is reported as
    // the race it is (a missing barrier before this read). An integer might
    // become an index, so it stops here.
    if (d->integral) fail(ErrorKind::Uninitialized, std::move(what));
    if (l.unwritten_read.empty()) l.unwritten_read = std::move(what);
  }
  if (a.write_epoch == now && a.writer != me) race(l, t, *d, index, "reads", a.writer, "wrote");
  if (a.read_epoch != now) {
    a.read_epoch = now;
    a.reader = me;
    a.other_reader = ElementAccess::kNobody;
  } else if (a.reader != me && a.other_reader == ElementAccess::kNobody) {
    a.other_reader = me;
  }
}

void release_shared(Launch& l) {
  for (const std::unique_ptr<SharedDecl>& d : l.shared) {
    ::operator delete(d->data, std::align_val_t(kSharedAlign));
  }
  l.shared.clear();
  l.shared_used = 0;
}

}  // namespace kiln::emu::detail
