// CUDA modules and launches (runtime/cuda/module.h) on the fake driver,
// whose images name host functions (fake_driver.cpp): loading and the
// per-device module cache, kernels keeping their module alive, parameter
// packing (device addresses, then 64-bit scalar slots), grid, block, shared
// memory and stream reaching cuLaunchKernel, the opt-in to more dynamic
// shared memory, limits checked before the driver, failures naming the
// driver's error, and an Executable plan on cuda:0 end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "kiln/error.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/cuda/module.h"
#include "runtime/executable.h"
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

// Two kernels in the fake's image format; no trailing NUL, as PTX text from a
// file would have none (the loader must add it: the fake reads up to one).
std::vector<char> test_image(const std::string& extra = "") {
  std::string text =
      "kiln-fake-cuda-module\n"
      "saxpy_k saxpy 5 max_threads=256 regs=40 local=8\n"
      "scale_k scale_f64 4 static_shared=1024\n"
      "record_k record 3\n"
      "fault_k fault 0\n" +
      extra;
  return std::vector<char>(text.begin(), text.end());
}

std::string_view view(const std::vector<char>& v) {
  return std::string_view(v.data(), v.size());
}

int64_t f32_slot(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return int64_t(bits);
}

int64_t f64_slot(double d) {
  int64_t bits;
  std::memcpy(&bits, &d, 8);
  return bits;
}

class CudaModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = fake_cuda_driver();
    if (!fake_)
      GTEST_SKIP() << "KILN_CUDA_DRIVER does not name the fake driver (run through ctest)";
    image_ = test_image();
  }
  const FakeCudaDriver* fake_ = nullptr;
  std::vector<char> image_;
};

LaunchConfig config_1d(int64_t grid, int64_t block, int64_t shared = 0) {
  LaunchConfig c;
  c.grid[0] = grid;
  c.block[0] = block;
  c.shared_bytes = shared;
  return c;
}

// --- modules ------------------------------------------------------------------------------

TEST_F(CudaModuleTest, ImagesAreLoadedOncePerDeviceWhileHeld) {
  const int loads = fake_->calls("cuModuleLoadData");
  const int unloads = fake_->calls("cuModuleUnload");
  const ModuleCacheStats before = module_cache_stats();
  {
    std::shared_ptr<const Module> a = Module::load(Device::cuda(0), view(image_));
    std::shared_ptr<const Module> b = Module::load(Device::cuda(0), view(image_));
    EXPECT_EQ(a, b);  // a function compiled twice shares the loaded module
    EXPECT_EQ(a->device(), Device::cuda(0));
    std::shared_ptr<const Module> c = Module::load(Device::cuda(1), view(image_));
    EXPECT_NE(a, c);  // another device, another context
    EXPECT_EQ(c->device(), Device::cuda(1));
    std::vector<char> other = test_image("record2_k record 1\n");
    EXPECT_NE(Module::load(Device::cuda(0), view(other)), a);
    EXPECT_EQ(fake_->calls("cuModuleLoadData"), loads + 3);
    const ModuleCacheStats now = module_cache_stats();
    EXPECT_EQ(now.loads, before.loads + 3);
    EXPECT_EQ(now.hits, before.hits + 1);
    EXPECT_EQ(now.live, before.live + 2);  // `other`'s module is gone already
  }
  // Nobody holds them: unloaded, and the next load loads again.
  EXPECT_EQ(fake_->calls("cuModuleUnload"), unloads + 3);
  EXPECT_EQ(module_cache_stats().live, before.live);
  std::shared_ptr<const Module> again = Module::load(Device::cuda(0), view(image_));
  EXPECT_EQ(fake_->calls("cuModuleLoadData"), loads + 4);
}

TEST_F(CudaModuleTest, AKernelKeepsItsModuleLoaded) {
  const int unloads = fake_->calls("cuModuleUnload");
  std::shared_ptr<const CudaKernel> k =
      Module::load(Device::cuda(0), view(image_))->kernel("record_k");
  EXPECT_EQ(fake_->calls("cuModuleUnload"), unloads);
  Tensor a = Tensor::empty({4}, DType::F32, Device::cuda(0));
  k->launch({&a, 1}, std::vector<int64_t>{1, 2}, config_1d(1, 1));
  EXPECT_EQ(std::string(fake_->last_launch().function), "record_k");
  k.reset();
  EXPECT_EQ(fake_->calls("cuModuleUnload"), unloads + 1);
}

TEST_F(CudaModuleTest, KernelAttributesComeFromTheDriver) {
  auto m = Module::load(Device::cuda(0), view(image_));
  auto k = m->kernel("saxpy_k");
  EXPECT_EQ(k->name(), "saxpy_k");
  EXPECT_EQ(&k->module(), m.get());
  EXPECT_EQ(k->attributes().max_threads_per_block, 256);
  EXPECT_EQ(k->attributes().registers, 40);
  EXPECT_EQ(k->attributes().local_bytes, 8);
  EXPECT_EQ(k->attributes().static_shared_bytes, 0);
  EXPECT_EQ(m->kernel("scale_k")->attributes().static_shared_bytes, 1024);
}

TEST_F(CudaModuleTest, LoadAndLookupFailuresNameTheDriverError) {
  std::string bad = "not an image";
  std::string e = error_of([&] { Module::load(Device::cuda(0), bad); });
  EXPECT_EQ(e,
            "internal error: cuda:0: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (a "
            "12-byte PTX image)");
  EXPECT_TRUE(is_internal([&] { Module::load(Device::cuda(0), bad); }));
  auto m = Module::load(Device::cuda(0), view(image_));
  e = error_of([&] { m->kernel("nope"); });
  EXPECT_NE(e.find("cuda:0: the loaded module has no kernel nope (cuModuleGetFunction: "
                   "CUDA_ERROR_NOT_FOUND)"),
            std::string::npos)
      << e;
  // PTX newer than the driver is the user's to fix (update the driver).
  std::vector<char> fresh = test_image("other_k record 0\n");
  fake_->fail_next("cuModuleLoadData", 222);
  auto load = [&] { Module::load(Device::cuda(0), view(fresh)); };
  e = error_of(load);
  EXPECT_EQ(e.rfind("cuda:0: cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (the PTX "
                    "is newer than this NVIDIA driver understands; update the driver",
                    0),
            0u)
      << e;
  fake_->fail_next("cuModuleLoadData", 222);
  EXPECT_FALSE(is_internal(load));
  EXPECT_EQ(error_of([] { Module::load(Device::cuda(3), "x"); }),
            "cannot use cuda:3: cuda:3 does not exist (2 devices)");
}

// --- launches -----------------------------------------------------------------------------

TEST_F(CudaModuleTest, LaunchesPassDeviceAddressesScalarSlotsAndTheConfig) {
  CudaRuntime& rt = cuda_runtime(0);
  auto k = Module::load(Device::cuda(0), view(image_))->kernel("saxpy_k");
  const int64_t n = 1000;
  Tensor x = Tensor::arange(0, double(n), 1, DType::F32);
  Tensor y = Tensor::full({n}, 0.25);
  std::vector<Tensor> bufs = {x.to(Device::cuda(0)), y.to(Device::cuda(0)),
                              Tensor::empty({n}, DType::F32, Device::cuda(0))};
  const std::vector<int64_t> scalars = {n, f32_slot(3.0f)};
  // 8 blocks of 128 threads cover all 1000 elements.
  k->launch(bufs, scalars, config_1d(8, 128));
  KilnFakeCudaLaunch l = fake_->last_launch();
  EXPECT_EQ(std::string(l.function), "saxpy_k");
  EXPECT_EQ(l.nparams, 5);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.params[i], uintptr_t(bufs[size_t(i)].data_ptr())) << "buffer " << i;
  }
  EXPECT_EQ(l.params[3], uint64_t(n));
  EXPECT_EQ(l.params[4], uint64_t(f32_slot(3.0f)));
  EXPECT_EQ(l.grid[0], 8u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block[0], 128u);
  EXPECT_EQ(l.block[2], 1u);
  EXPECT_EQ(l.shared_bytes, 0u);
  EXPECT_EQ(l.stream, rt.stream());  // a null stream in the config means the device's
  EXPECT_EQ(l.device, 0);
  EXPECT_GT(fake_->pending(), 0);  // queued: launches do not wait
  Tensor out = bufs[2].to(Device::cpu());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out.get(std::vector<int64_t>{i}), 3.0 * double(i) + 0.25) << i;
  }

  // A grid too small leaves the rest alone (fresh fake memory reads as NaN).
  Tensor partial = Tensor::empty({n}, DType::F32, Device::cuda(0));
  k->launch(std::vector<Tensor>{bufs[0], bufs[1], partial}, scalars, config_1d(2, 128));
  Tensor p = partial.to(Device::cpu());
  EXPECT_EQ(p.get(std::vector<int64_t>{255}), 3.0 * 255 + 0.25);
  EXPECT_TRUE(std::isnan(p.get(std::vector<int64_t>{256})));

  // An f64 scalar travels bit-cast in its slot.
  auto scale = Module::load(Device::cuda(0), view(image_))->kernel("scale_k");
  scale->launch(std::vector<Tensor>{bufs[0], bufs[2]}, std::vector<int64_t>{n, f64_slot(-0.5)},
                config_1d(4, 256));
  Tensor s = bufs[2].to(Device::cpu());
  EXPECT_EQ(s.get(std::vector<int64_t>{999}), -499.5);
}

TEST_F(CudaModuleTest, ViewsPassTheirOffsetAddress) {
  auto k = Module::load(Device::cuda(0), view(image_))->kernel("record_k");
  Tensor base = Tensor::empty({16}, DType::F32, Device::cuda(0));
  Tensor tail = base.view_as_strided({8}, {1}, 8);
  k->launch(std::vector<Tensor>{tail, base, base}, std::vector<int64_t>{}, config_1d(1, 32));
  KilnFakeCudaLaunch l = fake_->last_launch();
  EXPECT_EQ(l.params[0], uintptr_t(base.data_ptr()) + 32);
  EXPECT_EQ(l.params[1], uintptr_t(base.data_ptr()));
}

TEST_F(CudaModuleTest, MoreThan48KiBOfDynamicSharedMemoryOptsInOnce) {
  auto k = Module::load(Device::cuda(0), view(image_))->kernel("record_k");
  Tensor a = Tensor::empty({4}, DType::F32, Device::cuda(0));
  std::vector<Tensor> bufs = {a, a, a};
  const int sets = fake_->calls("cuFuncSetAttribute");
  k->launch(bufs, {}, config_1d(1, 64, 48 << 10));  // the default limit: no opt-in
  EXPECT_EQ(fake_->calls("cuFuncSetAttribute"), sets);
  k->launch(bufs, {}, config_1d(1, 64, 100 << 10));
  EXPECT_EQ(fake_->calls("cuFuncSetAttribute"), sets + 1);
  EXPECT_EQ(fake_->last_launch().shared_bytes, 100u << 10);
  k->launch(bufs, {}, config_1d(1, 64, 90 << 10));
  k->launch(bufs, {}, config_1d(1, 64, 100 << 10));
  EXPECT_EQ(fake_->calls("cuFuncSetAttribute"), sets + 1);
  k->launch(bufs, {}, config_1d(1, 64, 227 << 10));  // the device's most
  EXPECT_EQ(fake_->calls("cuFuncSetAttribute"), sets + 2);
  // Beyond what a block may have: a Kiln bug, caught before the driver.
  const int launches = fake_->calls("cuLaunchKernel");
  EXPECT_TRUE(is_internal([&] { k->launch(bufs, {}, config_1d(1, 64, (227 << 10) + 1)); }));
  // A kernel with static shared memory has that much less.
  auto s = Module::load(Device::cuda(0), view(image_))->kernel("scale_k");
  EXPECT_TRUE(is_internal([&] {
    s->launch(std::vector<Tensor>{a, a}, std::vector<int64_t>{0, 0},
              config_1d(1, 64, (227 << 10) - 1000));
  }));
  EXPECT_EQ(fake_->calls("cuLaunchKernel"), launches);
  cuda_runtime(0).synchronize();
}

TEST_F(CudaModuleTest, LaunchLimitsAreCheckedBeforeTheDriver) {
  auto k = Module::load(Device::cuda(0), view(image_))->kernel("saxpy_k");  // 256 threads at most
  Tensor a = Tensor::empty({4}, DType::F32, Device::cuda(0));
  std::vector<Tensor> bufs = {a, a, a};
  const std::vector<int64_t> scalars = {0, 0};
  const int launches = fake_->calls("cuLaunchKernel");
  std::string e = error_of([&] { k->launch(bufs, scalars, config_1d(1, 512)); });
  EXPECT_NE(e.find("kernel saxpy_k on cuda:0: a block of 512 threads, but the kernel allows at "
                   "most 256"),
            std::string::npos)
      << e;
  EXPECT_TRUE(is_internal([&] { k->launch(bufs, scalars, config_1d(1, 512)); }));
  LaunchConfig deep = config_1d(1, 1);
  deep.block[2] = 65;  // z extent beyond 64
  EXPECT_TRUE(is_internal([&] { k->launch(bufs, scalars, deep); }));
  EXPECT_TRUE(is_internal([&] { k->launch(bufs, scalars, config_1d(0, 1)); }));
  // A grid too large comes from the inputs' size: the user's to hear about.
  LaunchConfig wide = config_1d(1, 1);
  wide.grid[1] = 70000;
  e = error_of([&] { k->launch(bufs, scalars, wide); });
  EXPECT_EQ(e,
            "kernel saxpy_k on cuda:0 needs a grid of [1, 70000, 1] blocks, more than the device "
            "allows (2147483647, 65535, 65535); the inputs are too large for it");
  // A buffer on another device is a plan bug.
  Tensor other = Tensor::empty({4}, DType::F32, Device::cuda(1));
  EXPECT_TRUE(is_internal([&] {
    k->launch(std::vector<Tensor>{a, other, a}, scalars, config_1d(1, 1));
  }));
  EXPECT_EQ(fake_->calls("cuLaunchKernel"), launches);
}

TEST_F(CudaModuleTest, LaunchFailuresNameTheDriverError) {
  auto k = Module::load(Device::cuda(0), view(image_))->kernel("saxpy_k");
  Tensor a = Tensor::empty({4}, DType::F32, Device::cuda(0));
  fake_->fail_next("cuLaunchKernel", 701);
  std::string e = error_of([&] {
    k->launch(std::vector<Tensor>{a, a, a}, std::vector<int64_t>{4, 0}, config_1d(3, 64));
  });
  EXPECT_EQ(e,
            "internal error: cuda:0: launching kernel saxpy_k (grid [3, 1, 1], block [64, 1, 1], 0 "
            "bytes of dynamic shared memory) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  // A kernel that faults is reported where the runtime next waits.
  auto f = Module::load(Device::cuda(0), view(image_))->kernel("fault_k");
  f->launch({}, {}, config_1d(1, 1));
  e = error_of([] { cuda_runtime(0).synchronize(); });
  EXPECT_EQ(e,
            "internal error: cuda:0: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (a "
            "kernel faulted; this device cannot be used again in this process)");
  // So does one reading past its buffers (the fake checks every address),
  // here through the copy back, which waits too.
  k->launch(std::vector<Tensor>{a, a, a}, std::vector<int64_t>{1000, 0}, config_1d(8, 128));
  e = error_of([&] { a.to(Device::cpu()); });
  EXPECT_EQ(e,
            "internal error: cuda:0: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (a "
            "kernel faulted; this device cannot be used again in this process)");
}

TEST_F(CudaModuleTest, KernelsLaunchFromManyThreads) {
  // Both devices' modules loaded up front; the threads find them in the cache.
  auto m0 = Module::load(Device::cuda(0), view(image_));
  auto m1 = Module::load(Device::cuda(1), view(image_));
  const int loads = fake_->calls("cuModuleLoadData");
  constexpr int kThreads = 6;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Device dev = Device::cuda(t % 2);
      auto k = Module::load(dev, view(image_))->kernel("saxpy_k");
      for (int i = 0; i < 10; ++i) {
        const int64_t n = 50 + 13 * i + t;
        Tensor x = Tensor::rand({n}, uint64_t(t * 100 + i)).to(dev);
        Tensor y = Tensor::full({n}, double(t)).to(dev);
        Tensor out = Tensor::empty({n}, DType::F32, dev);
        k->launch(std::vector<Tensor>{x, y, out}, std::vector<int64_t>{n, f32_slot(2.0f)},
                  config_1d((n + 63) / 64, 64));
        Tensor o = out.to(Device::cpu()), hx = x.to(Device::cpu());
        for (int64_t j = 0; j < n; ++j) {
          std::vector<int64_t> at{j};
          if (o.get(at) != float(2.0f * float(hx.get(at)) + float(t))) wrong[size_t(t)]++;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[size_t(t)], 0) << "thread " << t;
  EXPECT_EQ(fake_->calls("cuModuleLoadData"), loads);
}

// --- the plan -----------------------------------------------------------------------------

InputSpec tensor_input(std::string name, int symbol) {
  InputSpec in;
  in.name = std::move(name);
  in.dtype = DType::F32;
  in.dims = {{0, symbol}};
  in.type_str = "f32[N]";
  return in;
}

// x, y: f32[N], a: float -> out = a * x + y, one launch of saxpy_k on cuda:0
// with grid ceil(N / 128) and block 128.
Executable saxpy_plan(std::shared_ptr<const KernelFunction> kernel) {
  using Op = SizeExpr::Op;
  Executable e("compiled @saxpy");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", n));
  e.add_input(tensor_input("y", n));
  InputSpec a;
  a.name = "a";
  a.kind = InputSpec::Kind::Float;
  a.type_str = "float";
  e.add_input(a);
  Slot out;
  out.name = "out";
  out.dtype = DType::F32;
  out.shape = {SizeExpr::symbol(n)};
  out.device = Device::cuda(0);
  int o = e.add_slot(out);
  Launch l;
  l.name = "saxpy_k";
  l.device = Device::cuda(0);
  l.kernel = std::move(kernel);
  l.args = {{0, true, false}, {1, true, false}, {o, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Symbol, n}, {ScalarRecipe::Kind::InputValue, 2, 0, DType::F32}};
  l.grid[0] = {{{Op::Symbol, n}, {Op::Const, 127}, {Op::Add, 0}, {Op::Const, 128}, {Op::Div, 0}}};
  l.block[0] = SizeExpr::constant(128);
  e.add_launch(l);
  e.set_outputs({o});
  e.finalize();
  return e;
}

TEST_F(CudaModuleTest, AnExecutableRunsOnCuda) {
  auto kernel = Module::load(Device::cuda(0), view(image_))->kernel("saxpy_k");
  Executable e = saxpy_plan(kernel);
  for (int64_t n : {1, 128, 1000}) {
    SCOPED_TRACE(n);
    Tensor x = Tensor::arange(0, double(n), 1, DType::F32), y = Tensor::full({n}, 1.5);
    ExecutableStats st;
    const int launches = fake_->launch_count();
    std::vector<Tensor> r = e.run({x, y, Tensor::scalar(-2.0)}, &st);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].device().is_cpu());  // back where the inputs live
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r[0].get(std::vector<int64_t>{i}), -2.0 * double(i) + 1.5) << i;
    }
    EXPECT_EQ(st.launches, 1);
    EXPECT_EQ(st.copies, 3);  // x and y in, out back
    EXPECT_EQ(st.copied_bytes, 3 * n * 4);
    ASSERT_EQ(fake_->launch_count(), launches + 1);
    KilnFakeCudaLaunch l = fake_->last_launch();
    EXPECT_EQ(l.grid[0], unsigned((n + 127) / 128));
    EXPECT_EQ(l.block[0], 128u);
    EXPECT_EQ(l.params[3], uint64_t(n));
    EXPECT_EQ(l.params[4], uint64_t(f32_slot(-2.0f)));
    EXPECT_NE(l.params[0], uintptr_t(x.data_ptr()));  // the device copy, not the host tensor
  }
  // Inputs already on the device are used in place, and the output stays there.
  Tensor x = Tensor::arange(0, 300, 1, DType::F32).to(Device::cuda(0));
  Tensor y = Tensor::zeros({300}).to(Device::cuda(0));
  ExecutableStats st;
  Tensor out = e.run({x, y, Tensor::scalar(4.0)}, &st)[0];
  EXPECT_EQ(out.device(), Device::cuda(0));
  EXPECT_EQ(st.copies, 0);
  EXPECT_EQ(fake_->last_launch().params[0], uintptr_t(x.data_ptr()));
  EXPECT_EQ(out.to(Device::cpu()).get(std::vector<int64_t>{299}), 4.0 * 299);
  // Nothing to compute: skipped, no launch.
  const int launches = fake_->launch_count();
  Tensor empty = e.run({Tensor::zeros({0}), Tensor::zeros({0}), Tensor::scalar(1.0)}, &st)[0];
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(st.skipped, 1);
  EXPECT_EQ(fake_->launch_count(), launches);
}

TEST_F(CudaModuleTest, AnExecutableRunsFromManyThreads) {
  Executable e = saxpy_plan(Module::load(Device::cuda(0), view(image_))->kernel("saxpy_k"));
  std::vector<int> wrong(6, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        int64_t n = 100 + 31 * i + t;
        Tensor x = Tensor::rand({n}, uint64_t(t * 10 + i)), y = Tensor::full({n}, double(i));
        Tensor r = e.run({x, y, Tensor::scalar(0.5)})[0];
        for (int64_t j = 0; j < n; ++j) {
          std::vector<int64_t> at{j};
          if (r.get(at) != float(0.5f * float(x.get(at)) + float(i))) wrong[size_t(t)]++;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 6; ++t) EXPECT_EQ(wrong[size_t(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::runtime::cuda
