// The thread pool covers ranges exactly once, nests safely, and the caching
// allocator reuses blocks instead of asking the OS again.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

TEST(ParallelFor, CoversEveryIndexOnce) {
  for (int64_t n : {0, 1, 7, 1023, 100000}) {
    std::vector<std::atomic<int>> hits(size_t(n) + 1);
    parallel_for(0, n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ParallelFor, NestedCallsRunAndCover) {
  std::atomic<int64_t> total{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      parallel_for(0, 100, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 6400);
}

extern "C" void add_range(int64_t b, int64_t e, void* closure) {
  *static_cast<std::atomic<int64_t>*>(closure) += e - b;
}

TEST(ParallelFor, CAbi) {
  std::atomic<int64_t> total{0};
  kiln_parallel_for(add_range, &total, 12345, 100);
  EXPECT_EQ(total.load(), 12345);
}

TEST(CachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::size_class(1), 64u);
  EXPECT_EQ(CachingAllocator::size_class(100), 128u);  // multiples of 64 (aligned_alloc)
  EXPECT_EQ(CachingAllocator::size_class(1000), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1100), 1280u);  // quarter steps above 1 KiB
  for (size_t n : {1u, 65u, 700u, 5000u, 200000u}) {
    EXPECT_EQ(CachingAllocator::size_class(n) % 64, 0u) << n;
  }
  EXPECT_GE(CachingAllocator::size_class(300000), 300000u);
  EXPECT_EQ(CachingAllocator::size_class(3u << 20), 4u << 20);  // huge-page multiples
}

TEST(CachingAllocator, ReusesFreedBlocks) {
  CachingAllocator a;
  { auto s = a.allocate(5u << 20); std::memset(s->data(), 1, 5u << 20); }
  AllocatorStats first = a.stats();
  EXPECT_EQ(first.os_allocations, 1u);
  EXPECT_EQ(first.bytes_in_use, 0u);
  auto s2 = a.allocate(5u << 20);
  AllocatorStats second = a.stats();
  EXPECT_EQ(second.os_allocations, 1u);  // nothing new from the OS
  EXPECT_EQ(second.cache_hits, 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s2->data()) % (2u << 20), 0u);  // huge-page aligned
  s2.reset();
  a.release_cached();
  EXPECT_EQ(a.stats().bytes_cached, 0u);
}

TEST(CachingAllocator, EmptyCachedTensor) {
  Tensor t = empty_cached({3, 5}, DType::F32);
  EXPECT_EQ(t.numel(), 15);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  Tensor z = empty_cached({0, 4}, DType::F64);
  EXPECT_EQ(z.numel(), 0);
}

}  // namespace
}  // namespace kiln
