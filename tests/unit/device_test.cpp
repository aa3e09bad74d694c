// Devices in the runtime without a GPU: Device names, the registry and its
// reasons (sim:N out of range, the CUDA driver missing), the sim devices'
// own memory pools, byte-exact copies between the host and sim devices, and
// tensors on sim: Tensor::to round trips, and element access from the host
// refused with a message naming the fix.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "kiln/error.h"
#include "runtime/allocator.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/sim_device.h"

namespace kiln::runtime {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// --- Device -----------------------------------------------------------------------------

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("sim"), Device::sim(0));
  EXPECT_EQ(Device::parse("sim:1"), Device::sim(1));
  EXPECT_EQ(Device::parse("sim:12"), Device::sim(12));  // parses; the registry says it is absent
  for (const char* bad : {"", "gpu", "CPU", "cpu:0", "sim:", "sim:-1", "sim:1x", " sim", "cuda:+1",
                          "sim:1234567890", "cuda::0"}) {
    EXPECT_FALSE(Device::parse(bad).has_value()) << bad;
  }
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  EXPECT_EQ(Device::sim().str(), "sim:0");
  for (Device d : {Device::cpu(), Device::cuda(1), Device::sim(1)}) {
    EXPECT_EQ(Device::parse(d.str()), d) << d.str();
  }
}

// --- registry ---------------------------------------------------------------------------

TEST(DeviceRegistry, HostAndSimDevicesAreUsable) {
  EXPECT_EQ(device_unavailable_reason(Device::cpu()), "");
  EXPECT_EQ(device_runtime(Device::cpu()).device(), Device::cpu());
  EXPECT_FALSE(device_runtime(Device::cpu()).properties().gpu);
  EXPECT_GT(device_runtime(Device::cpu()).properties().total_memory, 0);
  for (int i = 0; i < kNumSimDevices; ++i) {
    EXPECT_EQ(device_unavailable_reason(Device::sim(i)), "");
    EXPECT_EQ(device_runtime(Device::sim(i)).device(), Device::sim(i));
  }
  const DeviceProperties& p = device_runtime(Device::sim(0)).properties();
  EXPECT_EQ(p.name, "sim (simulated GPU)");
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.compute_capability_major, 9);
  EXPECT_EQ(p.compute_capability_minor, 0);
  EXPECT_EQ(p.sm_count, 132);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_EQ(p.shared_memory_per_block, 48 * 1024);
  EXPECT_EQ(p.max_threads_per_block, 1024);
  EXPECT_EQ(p.registers_per_sm, 65536);
  EXPECT_EQ(p.total_memory, int64_t(kSimMemoryBytes));
}

TEST(DeviceRegistry, MissingDevicesSayWhy) {
  EXPECT_EQ(device_unavailable_reason(Device::sim(2)), "sim:2 does not exist (2 sim devices)");
  EXPECT_EQ(error_of([] { device_runtime(Device::sim(2)); }),
            "cannot use sim:2: sim:2 does not exist (2 sim devices)");
  EXPECT_EQ(error_of([] { device_runtime(Device::sim(-1)); }),
            "cannot use sim:-1: sim:-1 does not exist (2 sim devices)");
  EXPECT_EQ(error_of([] { Tensor::empty({4}, DType::F32, Device::sim(5)); }),
            "cannot use sim:5: sim:5 does not exist (2 sim devices)");
}

TEST(DeviceRegistry, CudaNeedsTheDriverLibrary) {
  // Without a driver (CI, this machine kind) a CUDA device cannot be used and
  // the reason names what is missing; with one, cuda:0 has a runtime (the
  // fake driver's tests, tests/cuda_fake_driver/, check it in depth).
  std::string reason = device_unavailable_reason(Device::cuda(0));
  std::string why;
  if (cuda::driver(&why) != nullptr) {
    std::printf(
        "note: a CUDA driver is present (%d devices); the no-driver message is not checked\n",
        cuda::device_count());
    EXPECT_EQ(reason, "");
    EXPECT_EQ(device_runtime(Device::cuda(0)).device(), Device::cuda(0));
    int n = cuda::device_count();
    EXPECT_EQ(device_unavailable_reason(Device::cuda(n)),
              "cuda:" + std::to_string(n) + " does not exist (" + std::to_string(n) +
                  (n == 1 ? " device)" : " devices)"));
    DeviceProperties p = cuda::device_properties(0);
    EXPECT_TRUE(p.gpu);
    EXPECT_GT(p.sm_count, 0);
    EXPECT_EQ(p.warp_size, 32);
    return;
  }
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(error_of([] { device_runtime(Device::cuda(0)); }), "cannot use cuda:0: " + reason);
  EXPECT_EQ(reason, why);
  EXPECT_EQ(cuda::device_count(), 0);
  if (why.rfind("the NVIDIA driver library", 0) != 0) {
    // A library was found but is not a working driver (the toolkit's stub,
    // or no device): the reason says which.
    std::printf("note: libcuda.so.1 loads here but: %s\n", why.c_str());
    EXPECT_TRUE(why.rfind("cuInit failed: ", 0) == 0 || why == "no CUDA device") << why;
    return;
  }
  EXPECT_EQ(why.rfind("the NVIDIA driver library libcuda.so.1 was not found (", 0), 0u) << why;
  EXPECT_NE(why.find("libcuda.so.1:"), std::string::npos) << "the dlerror text: " << why;
  EXPECT_EQ(error_of([] { cuda::device_properties(0); }), "cannot use cuda:0: " + why);
}

// --- sim memory ---------------------------------------------------------------------------

TEST(SimDevice, HasItsOwnCachingPool) {
  AllocatorStats host_before = CachingAllocator::global().stats();
  DeviceRuntime& sim = device_runtime(Device::sim(0));
  void* first = nullptr;
  {
    std::shared_ptr<Storage> s = sim.allocate(1000);
    EXPECT_EQ(s->device(), Device::sim(0));
    EXPECT_EQ(s->nbytes(), 1000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u);
    first = s->data();
  }
  // The block went back to sim:0's pool and serves the next request of its size class.
  std::shared_ptr<Storage> again = sim.allocate(1000);
  EXPECT_EQ(again->data(), first);
  // sim:1 has a pool of its own, and the host's saw nothing.
  std::shared_ptr<Storage> other = device_runtime(Device::sim(1)).allocate(1000);
  EXPECT_NE(other->data(), first);
  EXPECT_EQ(other->device(), Device::sim(1));
  AllocatorStats host_after = CachingAllocator::global().stats();
  EXPECT_EQ(host_after.os_allocations, host_before.os_allocations);
  EXPECT_EQ(host_after.bytes_in_use, host_before.bytes_in_use);
  // Zero bytes still get a real (non-null) block.
  EXPECT_NE(sim.allocate(0)->data(), nullptr);
  sim.release_cached();
}

TEST(SimDevice, OutOfMemoryNamesTheSizeAndDevice) {
  size_t too_big = size_t(kSimMemoryBytes) + 1;
  EXPECT_EQ(error_of([&] { device_runtime(Device::sim(1)).allocate(too_big); }),
            "out of memory on sim:1: cannot allocate " + std::to_string(too_big) +
                " bytes (0 bytes in use of " + std::to_string(kSimMemoryBytes) + ")");
}

// --- copies -------------------------------------------------------------------------------

TEST(DeviceCopy, HostSimAndSimSimAreByteExact) {
  std::mt19937 rng(7);
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(63), size_t(64), size_t(65),
                   size_t(1000), size_t(4097), (size_t(3) << 20) + 5}) {
    SCOPED_TRACE(n);
    auto host_in = Storage::allocate(n + 3);
    auto* in = static_cast<unsigned char*>(host_in->data());
    for (size_t i = 0; i < n + 3; ++i) in[i] = static_cast<unsigned char>(rng());
    auto a = device_runtime(Device::sim(0)).allocate(n + 7);
    auto b = device_runtime(Device::sim(1)).allocate(n);
    auto c = device_runtime(Device::sim(0)).allocate(n);
    auto host_out = Storage::allocate(n + 1);
    std::memset(host_out->data(), 0xab, n + 1);
    copy_bytes(*a, 7, *host_in, 3, n);                     // host -> sim:0
    copy_bytes(*b, 0, *a, 7, n);                           // sim:0 -> sim:1 (peer)
    copy_bytes(*c, 0, *b, 0, n);                           // sim:1 -> sim:0
    device_runtime(Device::sim(0)).copy(*a, 0, *c, 0, n);  // within sim:0
    copy_bytes(*host_out, 1, *a, 0, n);                    // sim:0 -> host
    const auto* out = static_cast<const unsigned char*>(host_out->data());
    EXPECT_EQ(out[0], 0xab);  // nothing written before the offset
    EXPECT_EQ(std::memcmp(out + 1, in + 3, n), 0);
  }
}

TEST(DeviceCopy, RangesAndReachAreChecked) {
  auto host = Storage::allocate(16);
  auto sim = device_runtime(Device::sim(0)).allocate(16);
  EXPECT_THROW(copy_bytes(*sim, 8, *host, 0, 9), InternalError);
  EXPECT_THROW(copy_bytes(*sim, 0, *host, 17, 0), InternalError);
  EXPECT_NO_THROW(copy_bytes(*sim, 16, *host, 16, 0));
  // The host's runtime copies only between host storages.
  EXPECT_THROW(device_runtime(Device::cpu()).copy(*sim, 0, *host, 0, 4), InternalError);
  // A sim device copies only when one side is its own.
  auto other = device_runtime(Device::sim(1)).allocate(16);
  EXPECT_THROW(device_runtime(Device::sim(0)).copy(*other, 0, *host, 0, 4), InternalError);
}

// --- tensors on sim -----------------------------------------------------------------------

TEST(SimTensor, RoundTripsThroughTo) {
  Tensor host = Tensor::arange(0, 24, 1, DType::F32).view_as_strided({3, 4}, {8, 2}, 1);
  Tensor on_sim = host.to(Device::sim(0));  // the strided view is packed on the host first
  EXPECT_EQ(on_sim.device(), Device::sim(0));
  EXPECT_EQ(on_sim.sizes(), (Shape{3, 4}));
  EXPECT_TRUE(on_sim.is_contiguous());
  EXPECT_EQ(on_sim.data_ptr(), on_sim.storage()->data());  // the device address
  Tensor same = on_sim.to(Device::sim(0));
  EXPECT_EQ(same.storage(), on_sim.storage());  // already there: this tensor
  Tensor on_sim1 = on_sim.to(Device::sim(1));
  EXPECT_EQ(on_sim1.device(), Device::sim(1));
  Tensor back = on_sim1.to(Device::cpu());
  EXPECT_TRUE(back.device().is_cpu());
  EXPECT_TRUE(back.equal(host));
  EXPECT_EQ(back.get(std::vector<int64_t>{2, 3}), 23.0);  // offset 1 + 2*8 + 3*2

  // A device clone stays on the device and owns its memory.
  Tensor copy = on_sim.clone();
  EXPECT_EQ(copy.device(), Device::sim(0));
  EXPECT_NE(copy.storage(), on_sim.storage());
  EXPECT_TRUE(copy.to(Device::cpu()).equal(host));

  for (DType t : {DType::Bool, DType::I8, DType::F16, DType::BF16, DType::I64, DType::F64}) {
    Tensor x = Tensor::arange(0, 7, 1, DType::F32).to(t);
    Tensor y = x.to(Device::sim(1)).to(Device::cpu());
    EXPECT_EQ(y.dtype(), t);
    EXPECT_TRUE(y.equal(x)) << dtype_name(t);
  }
  Tensor empty = Tensor::empty({0, 5}, DType::F32, Device::sim(0));
  EXPECT_EQ(empty.to(Device::cpu()).sizes(), (Shape{0, 5}));
  EXPECT_EQ(empty.clone().device(), Device::sim(0));
  // An empty view may sit past the end of its storage.
  Tensor past_end = Tensor::zeros({4}).view_as_strided({0}, {1}, 10);
  EXPECT_EQ(past_end.to(Device::sim(1)).sizes(), (Shape{0}));
  Tensor scalar = Tensor::scalar(2.5).to(Device::sim(0)).to(Device::cpu());
  EXPECT_EQ(scalar.item(), 2.5);
}

TEST(SimTensor, HostReadsAreErrorsNamingTheFix) {
  Tensor t = Tensor::ones({2, 3}).to(Device::sim(0));
  const std::string fix =
      ", whose memory the host cannot read; copy it first with .to(kiln::Device::cpu())";
  std::vector<int64_t> at{1, 2};
  EXPECT_EQ(error_of([&] { t.get(at); }), "Tensor::get: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { t.get_int(at); }), "Tensor::get_int: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { t.set(at, 1.0); }), "Tensor::set: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { t.set_int(at, 1); }),
            "Tensor::set_int: the tensor lives on sim:0" + fix);
  Tensor one = Tensor::scalar(1).to(Device::sim(1));
  EXPECT_EQ(error_of([&] { one.item(); }), "Tensor::item: the tensor lives on sim:1" + fix);
  EXPECT_EQ(error_of([&] { t.to_string(); }), "Tensor::to_string: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] {
              t.equal(Tensor::ones({2, 3}));
            }),
            "Tensor::equal: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] {
              Tensor::ones({2, 3}).equal(t);
            }),
            "Tensor::equal: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { t.to(DType::F64); }),
            "Tensor::to(dtype): the tensor lives on sim:0" + fix);
  EXPECT_NO_THROW(t.to(DType::F32));  // no conversion, no read
  Tensor strided = t.view_as_strided({2}, {3}, 0);
  EXPECT_EQ(error_of([&] { strided.contiguous(); }),
            "Tensor::contiguous: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { strided.clone(); }), "Tensor::clone: the tensor lives on sim:0" + fix);
  EXPECT_EQ(error_of([&] { strided.to(Device::cpu()); }),
            "Tensor::to(cpu): this view of sizes [2], strides [3] on sim:0 is not contiguous, "
            "and Kiln cannot pack it there; copy a contiguous tensor instead");
  std::string path = (std::filesystem::temp_directory_path() / "kiln_device_test.npy").string();
  EXPECT_EQ(error_of([&] { write_npy(path, t); }), path + ": the tensor lives on sim:0" + fix);
  EXPECT_FALSE(std::filesystem::exists(path));
  // Metadata needs no read.
  EXPECT_EQ(t.numel(), 6);
  EXPECT_TRUE(t.is_contiguous());
}

}  // namespace
}  // namespace kiln::runtime
