// Size-class free lists over mmap'd (large) or aligned-malloc'd (small) blocks.
#include "runtime/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/error.h"

namespace kiln {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kSmallLimit = size_t(256) << 10;

void* os_alloc(size_t bytes) {
  if (bytes >= kHugePage) {
    // Over-map by one huge page, then trim, so the block is 2 MiB aligned.
    size_t span = bytes + kHugePage;
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = (base + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > base) munmap(p, aligned - base);
    uintptr_t end = aligned + bytes;
    uintptr_t span_end = base + span;
    if (span_end > end) munmap(reinterpret_cast<void*>(end), span_end - end);
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(aligned);
  }
  return std::aligned_alloc(64, bytes);
}

void os_free(void* p, size_t bytes) {
  if (bytes >= kHugePage) {
    munmap(p, bytes);
  } else {
    std::free(p);
  }
}

class HostBlocks final : public BlockSource {
 public:
  void* allocate(size_t bytes) override { return os_alloc(bytes); }
  void free(void* block, size_t bytes) override { os_free(block, bytes); }
};
}  // namespace

struct CachingAllocator::Impl {
  mutable std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size class -> block
  AllocatorStats stats;
};

CachingAllocator::CachingAllocator(Device device, uint64_t capacity,
                                   std::unique_ptr<BlockSource> source)
    : impl_(std::make_unique<Impl>()),
      source_(source ? std::move(source) : std::make_unique<HostBlocks>()),
      device_(device),
      capacity_(capacity) {}
CachingAllocator::~CachingAllocator() {
  release_cached();
}

CachingAllocator& CachingAllocator::global() {
  static CachingAllocator* a = new CachingAllocator();  // outlives every Storage
  return *a;
}

size_t CachingAllocator::size_class(size_t nbytes) {
  if (nbytes <= 64) return 64;
  if (nbytes < kSmallLimit) {
    // Powers of two split in four, so waste stays under 25%; classes stay
    // multiples of 64 because aligned_alloc needs the size to be a multiple of
    // the alignment.
    size_t p = 64;
    while (p * 2 <= nbytes) p *= 2;
    size_t step = std::max<size_t>(64, p / 4);
    return (nbytes + step - 1) / step * step;
  }
  if (nbytes < kHugePage) return (nbytes + 4095) / 4096 * 4096;
  return (nbytes + kHugePage - 1) / kHugePage * kHugePage;
}

std::shared_ptr<Storage> CachingAllocator::allocate(size_t nbytes) {
  // Far beyond any real memory; keeps the size-class rounding from wrapping.
  constexpr size_t kMaxRequest = size_t{1} << 46;
  KILN_USER_CHECK(nbytes <= kMaxRequest, "out of memory on " << device_.str()
                                                             << ": cannot allocate " << nbytes
                                                             << " bytes for a tensor");
  size_t cls = size_class(nbytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->free_blocks.find(cls);
    if (it != impl_->free_blocks.end()) {
      block = it->second;
      impl_->free_blocks.erase(it);
      impl_->stats.cache_hits++;
      impl_->stats.bytes_cached -= cls;
      impl_->stats.bytes_in_use += cls;
    }
  }
  if (!block) {
    auto over_capacity = [&] {
      std::lock_guard<std::mutex> lock(impl_->mu);
      return impl_->stats.bytes_in_use + impl_->stats.bytes_cached + cls > capacity_;
    };
    // Cached blocks of other size classes count against the capacity: give
    // them back before refusing.
    if (over_capacity()) release_cached();
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      KILN_USER_CHECK(impl_->stats.bytes_in_use + cls <= capacity_,
                      "out of memory on " << device_.str() << ": cannot allocate " << nbytes
                                          << " bytes (" << impl_->stats.bytes_in_use
                                          << " bytes in use of " << capacity_ << ")");
      impl_->stats.bytes_in_use += cls;  // reserved before the OS call, so racing callers see it
    }
    auto unreserve = [&] {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->stats.bytes_in_use -= cls;
    };
    try {
      block = source_->allocate(cls);
      if (!block) {
        // Give cached memory back and try once more before failing.
        release_cached();
        block = source_->allocate(cls);
      }
    } catch (...) {
      unreserve();
      throw;
    }
    if (!block) {
      unreserve();
      KILN_USER_ERROR("out of memory on " << device_.str() << ": could not allocate " << nbytes
                                          << " bytes" << source_->exhausted_note());
    }
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stats.os_allocations++;
  }
  Impl* impl = impl_.get();
  return Storage::wrap(block, nbytes, device_, [impl, cls](void* p) {
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->free_blocks.emplace(cls, p);
    impl->stats.bytes_cached += cls;
    impl->stats.bytes_in_use -= cls;
  });
}

void CachingAllocator::release_cached() {
  std::multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    blocks.swap(impl_->free_blocks);
    impl_->stats.bytes_cached = 0;
  }
  for (auto& [cls, p] : blocks) source_->free(p, cls);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

Tensor empty_cached(const Shape& sizes, DType dtype) {
  auto storage = CachingAllocator::global().allocate(shape_nbytes(sizes, dtype));
  return Tensor(storage, dtype, sizes, contiguous_strides(sizes), 0);
}

namespace {

// The storages behind kernel scratch pointers, until the kernel frees them.
struct ScratchBlocks {
  std::mutex mu;
  std::unordered_map<void*, std::shared_ptr<Storage>> live;
};

ScratchBlocks& scratch_blocks() {
  static ScratchBlocks* s = new ScratchBlocks;  // kernels may run during exit
  return *s;
}

}  // namespace

}  // namespace kiln

extern "C" void* kiln_scratch_alloc(int64_t bytes) {
  try {
    auto storage = kiln::CachingAllocator::global().allocate(size_t(std::max<int64_t>(bytes, 1)));
    void* p = storage->data();
    kiln::ScratchBlocks& s = kiln::scratch_blocks();
    std::lock_guard<std::mutex> lock(s.mu);
    s.live.emplace(p, std::move(storage));
    return p;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: kernel scratch of %lld bytes: %s\n", static_cast<long long>(bytes),
                 e.what());
    std::abort();
  }
}

extern "C" void kiln_scratch_free(void* p) {
  std::shared_ptr<kiln::Storage> storage;  // returned to the cache outside the lock
  kiln::ScratchBlocks& s = kiln::scratch_blocks();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.find(p);
  if (it == s.live.end()) return;
  storage = std::move(it->second);
  s.live.erase(it);
}
