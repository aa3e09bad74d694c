// The CUDA device runtime (runtime/cuda/cuda_runtime.h) on the fake driver
// (fake_driver.cpp, loaded through KILN_CUDA_DRIVER as ctest sets it): device
// discovery and properties, the primary context on every thread, the
// non-blocking stream, the caching allocator (reuse, size classes, release,
// out of memory), byte-exact copies both ways and between devices with
// queued (asynchronous) work, Tensor::to round trips, memset, events, driver
// failures named, and many threads at once.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "kiln/compile.h"
#include "kiln/error.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/device.h"
#include "tests/cuda_fake_driver/fake_driver_control.h"

namespace kiln::runtime::cuda {
namespace {

using kiln::testing::fake_cuda_driver;
using kiln::testing::FakeCudaDriver;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool is_internal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InternalError&) {
    return true;
  } catch (const Error&) {
  }
  return false;
}

class CudaRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = fake_cuda_driver();
    if (!fake_)
      GTEST_SKIP() << "KILN_CUDA_DRIVER does not name the fake driver (run through ctest)";
  }
  const FakeCudaDriver* fake_ = nullptr;
};

std::shared_ptr<Storage> host_bytes(size_t n, uint32_t seed) {
  auto s = Storage::allocate(n);
  std::mt19937 rng(seed);
  auto* p = static_cast<unsigned char*>(s->data());
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng());
  return s;
}

bool same_bytes(const Storage& a, size_t a_offset, const Storage& b, size_t b_offset, size_t n) {
  return std::memcmp(static_cast<const char*>(a.data()) + a_offset,
                     static_cast<const char*>(b.data()) + b_offset, n) == 0;
}

// --- discovery ----------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, DevicesAndPropertiesComeFromTheDriver) {
  EXPECT_EQ(device_count(), 2);
  EXPECT_EQ(device_unavailable_reason(Device::cuda(0)), "");
  EXPECT_EQ(device_unavailable_reason(Device::cuda(1)), "");
  EXPECT_EQ(device_unavailable_reason(Device::cuda(2)), "cuda:2 does not exist (2 devices)");
  EXPECT_EQ(error_of([] { device_runtime(Device::cuda(2)); }),
            "cannot use cuda:2: cuda:2 does not exist (2 devices)");
  EXPECT_EQ(error_of([] { Tensor::empty({3}, DType::F32, Device::cuda(7)); }),
            "cannot use cuda:7: cuda:7 does not exist (2 devices)");

  DeviceRuntime& rt = device_runtime(Device::cuda(1));
  EXPECT_EQ(rt.device(), Device::cuda(1));
  EXPECT_EQ(&rt, &cuda_runtime(1));  // one runtime per device
  const DeviceProperties& p = rt.properties();
  EXPECT_EQ(p.name, "NVIDIA H100 80GB HBM3 (Kiln fake driver)");
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.compute_capability_major, 9);
  EXPECT_EQ(p.compute_capability_minor, 0);
  EXPECT_EQ(p.sm_count, 132);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_EQ(p.shared_memory_per_block, 48 * 1024);
  EXPECT_EQ(p.shared_memory_per_block_optin, 227 * 1024);
  EXPECT_EQ(p.max_threads_per_block, 1024);
  EXPECT_EQ(p.registers_per_sm, 65536);
  EXPECT_EQ(p.total_memory, int64_t(80) << 30);
  EXPECT_EQ(cuda_runtime(1).max_grid(), (std::array<int64_t, 3>{2147483647, 65535, 65535}));
  EXPECT_EQ(cuda_runtime(1).max_block(), (std::array<int64_t, 3>{1024, 1024, 64}));

  // The public list shows both devices by name.
  int listed = 0;
  for (const DeviceInfo& d : kiln::devices()) {
    if (d.device.kind != Device::Kind::CUDA) continue;
    EXPECT_TRUE(d.available) << d.device.str() << ": " << d.why_unavailable;
    EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3 (Kiln fake driver)");
    ++listed;
  }
  EXPECT_EQ(listed, 2);
}

TEST_F(CudaRuntimeTest, OneNonBlockingStreamPerDevice) {
  CudaRuntime& a = cuda_runtime(0);
  CudaRuntime& b = cuda_runtime(1);
  EXPECT_NE(a.stream(), nullptr);
  EXPECT_NE(a.stream(), b.stream());
  EXPECT_EQ(fake_->stream_flags(a.stream()), 1);  // CU_STREAM_NON_BLOCKING
  EXPECT_EQ(a.stream_for(nullptr), a.stream());
}

TEST_F(CudaRuntimeTest, EveryThreadGetsThePrimaryContext) {
  // A fresh thread has no context current; the runtime makes its own current
  // on first use (the fake refuses memory calls without one), and switches
  // when the thread moves to another device.
  std::thread([&] {
    EXPECT_EQ(fake_->current_device(), -1);
    std::shared_ptr<Storage> s = cuda_runtime(1).allocate(100);
    EXPECT_EQ(fake_->current_device(), 1);
    std::shared_ptr<Storage> t = cuda_runtime(0).allocate(100);
    EXPECT_EQ(fake_->current_device(), 0);
    Tensor x = Tensor::arange(0, 5, 1, DType::F32).to(Device::cuda(1));
    EXPECT_EQ(fake_->current_device(), 1);
    EXPECT_TRUE(x.to(Device::cpu()).equal(Tensor::arange(0, 5, 1, DType::F32)));
  }).join();
}

// --- memory -------------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, TheCachingPoolReusesBlocksBySizeClass) {
  CudaRuntime& rt = cuda_runtime(0);
  rt.release_cached();
  const int allocs_before = fake_->calls("cuMemAlloc_v2");
  void* first = nullptr;
  {
    std::shared_ptr<Storage> s = rt.allocate(1000);
    EXPECT_EQ(s->device(), Device::cuda(0));
    EXPECT_EQ(s->nbytes(), 1000u);
    EXPECT_NE(s->data(), nullptr);
    first = s->data();
  }
  // 1000 and 1024 bytes share a size class: the cached block serves both.
  std::shared_ptr<Storage> again = rt.allocate(1024);
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(fake_->calls("cuMemAlloc_v2"), allocs_before + 1);
  // 1025 bytes do not.
  std::shared_ptr<Storage> bigger = rt.allocate(1025);
  EXPECT_NE(bigger->data(), first);
  EXPECT_EQ(fake_->calls("cuMemAlloc_v2"), allocs_before + 2);
  // Zero bytes still get a real block (the driver refuses zero-byte allocations).
  std::shared_ptr<Storage> none = rt.allocate(0);
  EXPECT_NE(none->data(), nullptr);
  EXPECT_EQ(none->nbytes(), 0u);
  EXPECT_GE(rt.allocator_stats().cache_hits, 1u);

  // release_cached gives unused blocks back to the driver, and only those.
  const int live = fake_->live_allocations(0);
  bigger.reset();
  none.reset();
  rt.release_cached();
  EXPECT_EQ(fake_->live_allocations(0), live - 2);
  EXPECT_EQ(rt.allocator_stats().bytes_cached, 0u);
  again.reset();
  rt.release_cached();
  EXPECT_EQ(fake_->live_allocations(0), live - 3);
}

TEST_F(CudaRuntimeTest, OutOfMemoryReleasesTheCacheThenNamesSizeAndDevice) {
  CudaRuntime& rt = cuda_runtime(1);
  rt.release_cached();
  constexpr unsigned long long kMiB = 1 << 20;
  fake_->set_memory_limit(1, fake_->live_bytes(1) + 64 * kMiB);
  { std::shared_ptr<Storage> a = rt.allocate(40 * kMiB); }
  EXPECT_EQ(rt.allocator_stats().bytes_cached, 40 * kMiB);
  // 40 MiB cached + 48 MiB > 64 MiB: the driver refuses, the pool gives its
  // cache back and the second try succeeds.
  const int frees = fake_->calls("cuMemFree_v2");
  std::shared_ptr<Storage> b = rt.allocate(48 * kMiB);
  EXPECT_EQ(fake_->calls("cuMemFree_v2"), frees + 1);
  EXPECT_EQ(rt.allocator_stats().bytes_cached, 0u);
  // Nothing left to give back: a kiln::Error naming the size and the device.
  std::string e = error_of([&] { rt.allocate(32 * kMiB); });
  EXPECT_EQ(e,
            "out of memory on cuda:1: could not allocate 33554432 bytes; the driver reports 16 MiB "
            "free of 81920 MiB (other processes may hold the rest)");
  EXPECT_EQ(error_of([&] { Tensor::empty({8 << 20}, DType::F32, Device::cuda(1)); }),
            e);  // the same through a Tensor
  b.reset();
  EXPECT_NE(rt.allocate(32 * kMiB), nullptr);  // fits after the cache shrinks
  fake_->set_memory_limit(1, 80ull << 30);
  rt.release_cached();
}

TEST_F(CudaRuntimeTest, MemoryInfoComesFromTheDriver) {
  MemoryInfo m = cuda_runtime(0).memory_info();
  EXPECT_EQ(m.total_bytes, int64_t(80) << 30);
  EXPECT_EQ(m.free_bytes, m.total_bytes - int64_t(fake_->live_bytes(0)));
}

// --- copies -------------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, CopiesAreByteExactForOddSizesAndOffsets) {
  CudaRuntime& rt = cuda_runtime(0);
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(63), size_t(64), size_t(65),
                   size_t(1000), size_t(4097), size_t((1 << 20) + 7)}) {
    SCOPED_TRACE(n);
    auto host = host_bytes(n + 5, uint32_t(n));
    auto dev = rt.allocate(n + 3);
    auto dev2 = rt.allocate(n + 9);
    auto back = Storage::allocate(n + 11);
    std::memset(back->data(), 0, n + 11);
    rt.copy(*dev, 3, *host, 5, n);    // host -> device, at odd offsets
    rt.copy(*dev2, 9, *dev, 3, n);    // within the device
    rt.copy(*back, 11, *dev2, 9, n);  // device -> host
    EXPECT_TRUE(same_bytes(*back, 11, *host, 5, n));
    // Through copy_bytes, which picks the device side's runtime.
    auto back2 = Storage::allocate(n);
    copy_bytes(*back2, 0, *dev, 3, n);
    EXPECT_TRUE(same_bytes(*back2, 0, *host, 5, n));
  }
}

TEST_F(CudaRuntimeTest, CopiesToTheDeviceAreQueuedAndCopiesBackWait) {
  CudaRuntime& rt = cuda_runtime(0);
  rt.synchronize();
  auto host = host_bytes(4096, 7);
  auto dev = rt.allocate(4096);
  rt.copy(*dev, 0, *host, 0, 4096);
  // Queued on the stream, not run yet: the fake runs work only when waited for.
  EXPECT_EQ(fake_->pending(), 1);
  // The source was staged: changing it now does not change what arrives.
  auto expected = host_bytes(4096, 7);
  std::memset(host->data(), 0, 4096);
  auto back = Storage::allocate(4096);
  rt.copy(*back, 0, *dev, 0, 4096);
  EXPECT_EQ(fake_->pending(), 0);  // a copy to the host has finished when copy() returns
  EXPECT_TRUE(same_bytes(*back, 0, *expected, 0, 4096));
  // Within the device: queued until synchronize().
  auto dev2 = rt.allocate(4096);
  rt.copy(*dev2, 0, *dev, 0, 4096);
  EXPECT_EQ(fake_->pending(), 1);
  rt.synchronize();
  EXPECT_EQ(fake_->pending(), 0);
}

TEST_F(CudaRuntimeTest, CopiesBetweenDevicesGoPeerToPeer) {
  auto host = host_bytes(1001, 3);
  auto d0 = cuda_runtime(0).allocate(1001);
  auto d1 = cuda_runtime(1).allocate(1003);
  const int peers = fake_->calls("cuMemcpyPeerAsync");
  copy_bytes(*d0, 0, *host, 0, 1001);
  copy_bytes(*d1, 2, *d0, 0, 1001);  // through cuda:1's runtime
  EXPECT_EQ(fake_->calls("cuMemcpyPeerAsync"), peers + 1);
  auto back = Storage::allocate(1001);
  copy_bytes(*back, 0, *d1, 2, 1001);
  EXPECT_TRUE(same_bytes(*back, 0, *host, 0, 1001));
  // Either runtime may be asked: cuda:0's copies to cuda:1 too.
  auto d1b = cuda_runtime(1).allocate(1001);
  cuda_runtime(0).copy(*d1b, 0, *d0, 0, 1001);
  copy_bytes(*back, 0, *d1b, 0, 1001);
  EXPECT_TRUE(same_bytes(*back, 0, *host, 0, 1001));
  EXPECT_EQ(fake_->pending(), 0);
}

TEST_F(CudaRuntimeTest, CopyRangesAndReachAreChecked) {
  CudaRuntime& rt = cuda_runtime(0);
  auto dev = rt.allocate(16);
  auto host = Storage::allocate(16);
  EXPECT_TRUE(is_internal([&] { rt.copy(*dev, 8, *host, 0, 9); }));
  EXPECT_TRUE(is_internal([&] { rt.copy(*host, 0, *dev, 16, 1); }));
  // cuda:0's runtime does not copy between two other places, nor to sim.
  auto other = cuda_runtime(1).allocate(16);
  EXPECT_TRUE(is_internal([&] { rt.copy(*host, 0, *other, 0, 4); }));
  auto sim = device_runtime(Device::sim(0)).allocate(16);
  EXPECT_TRUE(is_internal([&] { rt.copy(*sim, 0, *dev, 0, 4); }));
  EXPECT_EQ(error_of([&] { copy_bytes(*sim, 0, *dev, 0, 4); }),
            "cannot copy from cuda:0 to sim:0 directly; copy through the host");
}

TEST_F(CudaRuntimeTest, FillSetsBytes) {
  CudaRuntime& rt = cuda_runtime(0);
  auto dev = rt.allocate(100);
  rt.fill(*dev, 0, 0, 100);
  rt.fill(*dev, 10, 0xab, 7);
  auto back = Storage::allocate(100);
  rt.copy(*back, 0, *dev, 0, 100);
  auto* p = static_cast<const unsigned char*>(back->data());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p[i], i >= 10 && i < 17 ? 0xab : 0) << i;
  EXPECT_TRUE(is_internal([&] { rt.fill(*dev, 99, 0, 2); }));
}

TEST_F(CudaRuntimeTest, DriverFailuresNameTheCallAndTheError) {
  CudaRuntime& rt = cuda_runtime(0);
  auto dev = rt.allocate(64);
  auto host = Storage::allocate(64);
  fake_->fail_next("cuMemcpyDtoHAsync_v2", 1);
  std::string e = error_of([&] { rt.copy(*host, 0, *dev, 0, 64); });
  EXPECT_EQ(e, "cuda:0: cuMemcpyDtoHAsync failed: CUDA_ERROR_INVALID_VALUE");
  // A driver failure other than out of memory while allocating is no OOM,
  // and the pool does not count the block it did not get.
  const uint64_t in_use = rt.allocator_stats().bytes_in_use;
  fake_->fail_next("cuMemAlloc_v2", 1);
  EXPECT_EQ(error_of([&] { rt.allocate(size_t(3) << 30); }),
            "cuda:0: cuMemAlloc of 3221225472 bytes failed: CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(rt.allocator_stats().bytes_in_use, in_use);
}

// --- tensors ------------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, TensorsRoundTripThroughTo) {
  Tensor x = Tensor::randn({7, 33}, 5);
  Tensor d = x.to(Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  EXPECT_EQ(d.sizes(), x.sizes());
  EXPECT_NE(d.data_ptr(), x.data_ptr());
  EXPECT_TRUE(d.to(Device::cpu()).equal(x));
  // Between devices, and a device clone.
  Tensor e = d.to(Device::cuda(1));
  EXPECT_EQ(e.device(), Device::cuda(1));
  EXPECT_TRUE(e.clone().to(Device::cpu()).equal(x));
  // A strided host view is packed on the host first.
  Tensor t = x.view_as_strided({33, 7}, {1, 33}, 0);
  EXPECT_TRUE(t.to(Device::cuda(0)).to(Device::cpu()).equal(t.contiguous()));
  // Every dtype's bytes, and empty tensors.
  for (DType dt : {DType::F16, DType::BF16, DType::F64, DType::I8, DType::I64, DType::Bool}) {
    Tensor h = Tensor::arange(0, 17, 1, DType::I64).to(dt);
    EXPECT_TRUE(h.to(Device::cuda(1)).to(Device::cpu()).equal(h)) << dtype_name(dt);
  }
  Tensor empty = Tensor::zeros({0, 4}).to(Device::cuda(0));
  EXPECT_EQ(empty.sizes(), (Shape{0, 4}));
  EXPECT_EQ(empty.to(Device::cpu()).numel(), 0);
}

TEST_F(CudaRuntimeTest, HostReadsOfDeviceTensorsAreErrorsNamingTheFix) {
  Tensor d = Tensor::ones({3}).to(Device::cuda(0));
  std::string e = error_of([&] { d.item(); });
  EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
  EXPECT_NE(e.find(".to(kiln::Device::cpu())"), std::string::npos) << e;
}

// --- events -------------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, EventsTimeWorkOnTheStream) {
  CudaRuntime& rt = cuda_runtime(0);
  Event start(Device::cuda(0)), end(Device::cuda(0));
  EXPECT_EQ(start.device(), Device::cuda(0));
  start.record();
  auto dev = rt.allocate(1 << 20);
  auto host = host_bytes(1 << 20, 1);
  rt.copy(*dev, 0, *host, 0, 1 << 20);
  end.record();
  EXPECT_GT(fake_->pending(), 0);      // nothing ran yet
  double ms = elapsed_ms(start, end);  // waits for `end`
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 10000.0);
  EXPECT_EQ(fake_->pending(), 0);
  // Timing across devices is a caller's bug.
  Event other(Device::cuda(1));
  other.record();
  EXPECT_TRUE(is_internal([&] { elapsed_ms(start, other); }));
  EXPECT_EQ(error_of([] { Event e(Device::cuda(5)); }),
            "cannot use cuda:5: cuda:5 does not exist (2 devices)");
}

// --- threads ------------------------------------------------------------------------------

TEST_F(CudaRuntimeTest, ManyThreadsShareTheDevices) {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 25; ++i) {
        Tensor x = Tensor::rand({int64_t(100 + 37 * i + t)}, uint64_t(t * 1000 + i));
        Tensor d = x.to(Device::cuda(t % 2));
        Tensor e = d.to(Device::cuda(1 - t % 2));
        if (!e.to(Device::cpu()).equal(x)) failures[size_t(t)]++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
  EXPECT_EQ(fake_->pending(), 0);
}

}  // namespace
}  // namespace kiln::runtime::cuda
