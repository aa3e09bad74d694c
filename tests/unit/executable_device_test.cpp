// runtime::Executable with launches on the simulated device, through
// hand-written generic kernels that check where their buffers live and work
// through raw pointers (as device code would): copy slots in and out, inputs
// already on the device used in place, outputs returned where the first input
// lives, grid/block expressions evaluated per call, constants uploaded once,
// the plan text, and plan bugs (a buffer on the wrong device) as
// InternalError.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "kiln/error.h"
#include "runtime/executable.h"

namespace kiln::runtime {
namespace {

using Op = SizeExpr::Op;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

InputSpec tensor_input(std::string name, std::vector<InputSpec::DimSpec> dims,
                       DType t = DType::F32) {
  InputSpec in;
  in.name = std::move(name);
  in.dtype = t;
  in.dims = std::move(dims);
  in.type_str = std::string(dtype_name(t)) + "[...]";
  return in;
}

Slot planned(std::string name, std::vector<SizeExpr> shape, Device device) {
  Slot s;
  s.name = std::move(name);
  s.dtype = DType::F32;
  s.shape = std::move(shape);
  s.device = device;
  return s;
}

Tensor iota(int64_t n) {
  return Tensor::arange(0, double(n), 1, DType::F32);
}

// What the kernels saw, for the test to check after a run.
struct Seen {
  std::mutex mu;
  std::vector<LaunchConfig> configs;
  std::vector<const void*> first_buffer;
  std::vector<std::string> wrong_device;
  void record(const char* kernel, std::span<const Tensor> b, const LaunchConfig& c, Device want) {
    std::lock_guard<std::mutex> lock(mu);
    configs.push_back(c);
    first_buffer.push_back(b[0].data_ptr());
    for (const Tensor& t : b) {
      if (t.device() != want)
        wrong_device.push_back(std::string(kernel) + " got " + t.device().str());
    }
  }
};

// out[i] = scale * in[i] for the buffers' element count; on `device`.
std::shared_ptr<const KernelFunction> scale_kernel(Seen& seen, Device device, float scale) {
  return generic_kernel([&seen, device, scale](std::span<const Tensor> b,
                                               std::span<const int64_t> s, const LaunchConfig& c) {
    seen.record("scale", b, c, device);
    const float* x = static_cast<const float*>(b[0].data_ptr());
    float* y = static_cast<float*>(b[1].data_ptr());
    for (int64_t i = 0; i < s[0]; ++i) y[i] = scale * x[i];
  });
}

// out[i] = a[i] + b[i]; on `device`.
std::shared_ptr<const KernelFunction> add_kernel(Seen& seen, Device device) {
  return generic_kernel([&seen, device](std::span<const Tensor> b, std::span<const int64_t> s,
                                        const LaunchConfig& c) {
    seen.record("add", b, c, device);
    const float* x = static_cast<const float*>(b[0].data_ptr());
    const float* y = static_cast<const float*>(b[1].data_ptr());
    float* z = static_cast<float*>(b[2].data_ptr());
    for (int64_t i = 0; i < s[0]; ++i) z[i] = x[i] + y[i];
  });
}

SizeExpr ceil_div(int symbol, int64_t by) {
  return {{{Op::Symbol, symbol}, {Op::Const, by - 1}, {Op::Add, 0}, {Op::Const, by}, {Op::Div, 0}}};
}

// x, y: f32[N] -> out = 2 * x + y, both launches on sim:0:
//   twice: t = 2 * x   (grid ceil(N / 4), block 4, shared N * 4)
//   add:   out = t + y
Executable sim_plan(Seen& seen) {
  Executable e("compiled @f");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  e.add_input(tensor_input("y", {{0, n}}));
  int t = e.add_slot(planned("t", {SizeExpr::symbol(n)}, Device::sim(0)));
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}, Device::sim(0)));
  Launch twice;
  twice.name = "twice";
  twice.device = Device::sim(0);
  twice.kernel = scale_kernel(seen, Device::sim(0), 2.0f);
  twice.args = {{0, true, false}, {t, true, true}};
  twice.scalars = {{ScalarRecipe::Kind::Symbol, n}};
  twice.grid[0] = ceil_div(n, 4);
  twice.block[0] = SizeExpr::constant(4);
  twice.shared_bytes = {{{Op::Symbol, n}, {Op::Const, 4}, {Op::Mul, 0}}};
  e.add_launch(twice);
  Launch add;
  add.name = "add";
  add.device = Device::sim(0);
  add.kernel = add_kernel(seen, Device::sim(0));
  add.args = {{t, true, false}, {1, true, false}, {out, true, true}};
  add.scalars = {{ScalarRecipe::Kind::Symbol, n}};
  e.add_launch(add);
  e.set_outputs({out});
  e.finalize();
  return e;
}

void expect_result(const Tensor& out, const Tensor& x, const Tensor& y) {
  Tensor o = out.to(Device::cpu()), hx = x.to(Device::cpu()), hy = y.to(Device::cpu());
  ASSERT_EQ(o.sizes(), hx.sizes());
  for (int64_t i = 0; i < o.numel(); ++i) {
    std::vector<int64_t> at{i};
    ASSERT_EQ(o.get(at), 2 * hx.get(at) + hy.get(at)) << i;
  }
}

TEST(ExecutableOnSim, HostInputsAreCopiedInAndOutputsBack) {
  Seen seen;
  Executable e = sim_plan(seen);
  for (int64_t n : {1, 7, 1000}) {
    seen.configs.clear();
    Tensor x = iota(n), y = Tensor::full({n}, 0.5);
    ExecutableStats st;
    std::vector<Tensor> r = e.run({x, y}, &st);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].device().is_cpu());  // the first input is on the host
    expect_result(r[0], x, y);
    EXPECT_EQ(st.launches, 2);
    EXPECT_EQ(st.copies, 3);  // x and y in, out back
    EXPECT_EQ(st.copied_bytes, 3 * n * 4);
    // On sim: x's copy, t, out, and y's copy in the memory of x's (dead after
    // `twice`); on the host: out's copy back.
    EXPECT_EQ(st.allocated_buffers, 4);
    EXPECT_EQ(st.reused_buffers, 1);
    ASSERT_EQ(seen.configs.size(), 2u);
    const LaunchConfig& c = seen.configs[0];
    EXPECT_EQ(c.grid[0], (n + 3) / 4);
    EXPECT_EQ(c.grid[1], 1);
    EXPECT_EQ(c.block[0], 4);
    EXPECT_EQ(c.block[2], 1);
    EXPECT_EQ(c.shared_bytes, 4 * n);
    EXPECT_EQ(c.stream, nullptr);
    EXPECT_EQ(seen.configs[1].grid[0], 1);  // the defaults
    EXPECT_EQ(seen.configs[1].shared_bytes, 0);
  }
  // Nothing to compute: the kernels are skipped, the (empty) copies still made.
  seen.configs.clear();
  ExecutableStats st;
  Tensor empty = e.run({iota(0), Tensor::zeros({0})}, &st)[0];
  EXPECT_EQ(empty.sizes(), (Shape{0}));
  EXPECT_TRUE(empty.device().is_cpu());
  EXPECT_EQ(st.launches, 0);
  EXPECT_EQ(st.skipped, 2);
  EXPECT_EQ(st.copied_bytes, 0);
  EXPECT_TRUE(seen.configs.empty());
  EXPECT_TRUE(seen.wrong_device.empty()) << seen.wrong_device[0];
}

TEST(ExecutableOnSim, DescribesCopiesDevicesAndGrids) {
  Seen seen;
  Executable e = sim_plan(seen);
  EXPECT_EQ(e.describe(),
            "executable compiled @f\n"
            "  slot 0 x: input 0 f32[...]\n"
            "  slot 1 y: input 1 f32[...]\n"
            "  slot 2 t: f32[N] on sim:0 live 0..1\n"
            "  slot 3 out: f32[N] on sim:0 live 1..end\n"
            "  slot 4 x: copy of slot 0 to sim:0 live 0..0\n"
            "  slot 5 y: copy of slot 1 to sim:0 live 1..1\n"
            "  launch 0 twice(slot 4, out slot 2; N) on sim:0 grid [((N + 3) / 4), 1, 1] "
            "block [4, 1, 1] shared (N * 4)\n"
            "  launch 1 add(slot 2, slot 5, out slot 3; N) on sim:0 grid [1, 1, 1] block [1, 1, 1] "
            "shared 0\n"
            "  outputs: slot 3 (returned on the device of the first tensor input)\n");
}

TEST(ExecutableOnSim, InputsOnTheDeviceAreUsedInPlace) {
  Seen seen;
  Executable e = sim_plan(seen);
  Tensor x = iota(10).to(Device::sim(0)), y = Tensor::full({10}, 3.0).to(Device::sim(0));
  ExecutableStats st;
  std::vector<Tensor> r = e.run({x, y}, &st);
  EXPECT_EQ(st.copies, 0);
  EXPECT_EQ(st.copied_bytes, 0);
  EXPECT_EQ(st.allocated_buffers, 2);             // t and out only
  EXPECT_EQ(seen.first_buffer[0], x.data_ptr());  // `twice` read x itself
  EXPECT_EQ(r[0].device(), Device::sim(0));       // the first input is on sim:0
  expect_result(r[0], x, y);
  EXPECT_TRUE(seen.wrong_device.empty());
}

TEST(ExecutableOnSim, OutputsGoToTheFirstInputsDevice) {
  Seen seen;
  Executable e = sim_plan(seen);
  Tensor hx = iota(6), hy = Tensor::full({6}, -1.0);
  ExecutableStats st;
  // x on sim:0, y on the host: y comes in, the output stays.
  Tensor out = e.run({hx.to(Device::sim(0)), hy}, &st)[0];
  EXPECT_EQ(out.device(), Device::sim(0));
  EXPECT_EQ(st.copies, 1);
  expect_result(out, hx, hy);
  // x on the host, y on sim:0: x comes in, the output goes back to the host.
  out = e.run({hx, hy.to(Device::sim(0))}, &st)[0];
  EXPECT_TRUE(out.device().is_cpu());
  EXPECT_EQ(st.copies, 2);
  expect_result(out, hx, hy);
  // x on sim:1: copied sim:1 -> sim:0 for the kernel, the output back to sim:1.
  out = e.run({hx.to(Device::sim(1)), hy}, &st)[0];
  EXPECT_EQ(out.device(), Device::sim(1));
  EXPECT_EQ(st.copies, 3);
  expect_result(out, hx, hy);
  EXPECT_TRUE(seen.wrong_device.empty());
}

TEST(ExecutableOnSim, StridedInputsArePackedOnTheHostOnly) {
  Seen seen;
  Executable e = sim_plan(seen);
  Tensor base = iota(20);
  Tensor x = base.view_as_strided({5}, {4}, 1);  // 1, 5, 9, 13, 17
  Tensor y = Tensor::zeros({5});
  ExecutableStats st;
  Tensor out = e.run({x, y}, &st)[0];
  expect_result(out, x, y);
  EXPECT_EQ(st.copied_bytes, 3 * 5 * 4);  // packed on the way: 5 elements, not the base
  Tensor on_sim = base.to(Device::sim(0)).view_as_strided({5}, {4}, 1);
  EXPECT_EQ(error_of([&] {
              e.run({on_sim, y});
            }),
            "compiled @f: input 'x' is a non-contiguous view on sim:0, and kernel twice needs it "
            "packed, which Kiln cannot do there; pass a contiguous tensor");
  Tensor on_sim1 = base.to(Device::sim(1)).view_as_strided({5}, {4}, 1);
  EXPECT_EQ(error_of([&] {
              e.run({on_sim1, y});
            }),
            "compiled @f: input 'x' is a non-contiguous view on sim:1, which Kiln cannot pack "
            "there to copy it to sim:0; pass a contiguous tensor");
}

TEST(ExecutableOnSim, HostKernelsGetHostCopiesOfDeviceData) {
  // sim: t = 3 * x; host: out = 2 * t (a host kernel through raw pointers).
  Seen seen;
  Executable e("compiled @mixed");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  int t = e.add_slot(planned("t", {SizeExpr::symbol(n)}, Device::sim(0)));
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}, Device::cpu()));
  Launch a;
  a.name = "thrice";
  a.device = Device::sim(0);
  a.kernel = scale_kernel(seen, Device::sim(0), 3.0f);
  a.args = {{0, true, false}, {t, true, true}};
  a.scalars = {{ScalarRecipe::Kind::Symbol, n}};
  e.add_launch(a);
  Launch b;
  b.name = "twice";
  b.kernel = scale_kernel(seen, Device::cpu(), 2.0f);
  b.args = {{t, true, false}, {out, true, true}};
  b.scalars = {{ScalarRecipe::Kind::Symbol, n}};
  e.add_launch(b);
  e.set_outputs({out});
  e.finalize();
  EXPECT_NE(e.describe().find("slot 4 t: copy of slot 1 to cpu live 1..1"), std::string::npos)
      << e.describe();
  ExecutableStats st;
  Tensor r = e.run({iota(5)}, &st)[0];
  EXPECT_EQ(st.copies, 2);  // x to sim, t to the host
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(r.data<float>()[i], float(6 * i));
  // With x on sim:0, the host-computed output goes back there.
  r = e.run({iota(5).to(Device::sim(0))}, &st)[0];
  EXPECT_EQ(r.device(), Device::sim(0));
  EXPECT_EQ(st.copies, 2);  // t to the host, out to sim:0
  EXPECT_EQ(r.to(Device::cpu()).data<float>()[4], 24.0f);
  EXPECT_TRUE(seen.wrong_device.empty()) << seen.wrong_device[0];
}

TEST(ExecutableOnSim, HostPlansTakeDeviceInputs) {
  // A host-only plan: sim inputs come to the host (and a scalar's value too),
  // outputs go back to sim.
  Seen seen;
  Executable e("compiled @host");
  int n = e.add_symbol("N");
  e.add_input(tensor_input("x", {{0, n}}));
  InputSpec a;
  a.name = "a";
  a.kind = InputSpec::Kind::Int;
  a.dtype = DType::I64;
  a.type_str = "int";
  e.add_input(a);
  int out = e.add_slot(planned("out", {SizeExpr::symbol(n)}, Device::cpu()));
  Launch l;
  l.name = "shift";
  l.kernel = generic_kernel(
      [&seen](std::span<const Tensor> b, std::span<const int64_t> s, const LaunchConfig& c) {
        seen.record("shift", b, c, Device::cpu());
        for (int64_t i = 0; i < s[0]; ++i) b[1].data<float>()[i] = b[0].data<float>()[i] + s[1];
      });
  l.args = {{0, true, false}, {out, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Symbol, n}, {ScalarRecipe::Kind::InputValue, 1, 0, DType::I64}};
  e.add_launch(l);
  e.set_outputs({out, 0});
  e.finalize();
  EXPECT_EQ(e.describe().find("copy"), std::string::npos) << e.describe();
  EXPECT_EQ(e.describe().find(" on "), std::string::npos) << e.describe();
  Tensor x = iota(4).to(Device::sim(1));
  ExecutableStats st;
  std::vector<Tensor> r = e.run({x, Tensor::scalar(10, DType::I64).to(Device::sim(0))}, &st);
  EXPECT_EQ(st.copies, 3);  // x and a to the host, out back to sim:1
  EXPECT_EQ(r[0].device(), Device::sim(1));
  EXPECT_EQ(r[0].to(Device::cpu()).data<float>()[3], 13.0f);
  EXPECT_EQ(r[1].storage(), x.storage());  // an input returned as an output is the input itself
  EXPECT_TRUE(seen.wrong_device.empty()) << seen.wrong_device[0];
}

TEST(ExecutableOnSim, ConstantsAreUploadedOnce) {
  Seen seen;
  Executable e("compiled @c");
  e.add_input(tensor_input("x", {{3, -1}}));
  Slot c;
  c.kind = Slot::Kind::Constant;
  c.name = "c";
  c.constant = Tensor::full({3}, 10.0);
  c.dtype = DType::F32;
  int cs = e.add_slot(c);
  int out = e.add_slot(planned("out", {SizeExpr::constant(3)}, Device::sim(0)));
  Launch l;
  l.name = "add";
  l.device = Device::sim(0);
  l.kernel = add_kernel(seen, Device::sim(0));
  l.args = {{0, true, false}, {cs, true, false}, {out, true, true}};
  l.scalars = {{ScalarRecipe::Kind::Stride, 0, 0}};  // 1: the kernel adds one element
  e.add_launch(l);
  e.set_outputs({out});
  e.finalize();
  EXPECT_NE(e.describe().find("slot 4 c: constant f32[3] on sim:0 (upload of slot 1)"),
            std::string::npos)
      << e.describe();
  ExecutableStats st;
  Tensor r = e.run({iota(3).to(Device::sim(0))}, &st)[0];
  EXPECT_EQ(st.copies, 0);  // the constant is already there
  EXPECT_EQ(r.to(Device::cpu()).data<float>()[0], 10.0f);
  EXPECT_TRUE(seen.wrong_device.empty()) << seen.wrong_device[0];
}

TEST(ExecutableOnSim, PlanBugsAreInternalErrors) {
  Seen seen;
  {
    // A host launch writing a sim buffer.
    Executable e("compiled @bad");
    e.add_input(tensor_input("x", {{4, -1}}));
    int t = e.add_slot(planned("t", {SizeExpr::constant(4)}, Device::sim(0)));
    Launch l;
    l.name = "k";
    l.kernel = scale_kernel(seen, Device::cpu(), 1.0f);
    l.args = {{0, true, false}, {t, true, true}};
    e.add_launch(l);
    e.set_outputs({t});
    EXPECT_THROW(e.finalize(), InternalError);
  }
  {
    // A slot rewritten after its copy to another device was made.
    Executable e("compiled @stale");
    e.add_input(tensor_input("x", {{4, -1}}));
    int t = e.add_slot(planned("t", {SizeExpr::constant(4)}, Device::cpu()));
    int u = e.add_slot(planned("u", {SizeExpr::constant(4)}, Device::sim(0)));
    Launch w;
    w.name = "write";
    w.kernel = scale_kernel(seen, Device::cpu(), 1.0f);
    w.args = {{0, true, false}, {t, true, true}};
    Launch r;
    r.name = "read";
    r.device = Device::sim(0);
    r.kernel = scale_kernel(seen, Device::sim(0), 1.0f);
    r.args = {{t, true, false}, {u, true, true}};
    e.add_launch(w);
    e.add_launch(r);
    e.add_launch(w);
    e.set_outputs({u});
    EXPECT_THROW(e.finalize(), InternalError);
  }
  {
    // A grid that comes out empty for the call's sizes.
    Executable e("compiled @grid");
    int n = e.add_symbol("N");
    e.add_input(tensor_input("x", {{0, n}}));
    int t = e.add_slot(planned("t", {SizeExpr::symbol(n)}, Device::sim(0)));
    Launch l;
    l.name = "k";
    l.device = Device::sim(0);
    l.kernel = scale_kernel(seen, Device::sim(0), 1.0f);
    l.args = {{0, true, false}, {t, true, true}};
    l.scalars = {{ScalarRecipe::Kind::Symbol, n}};
    l.grid[1] = {{{Op::Symbol, n}, {Op::Const, 5}, {Op::Sub, 0}}};
    e.add_launch(l);
    e.set_outputs({t});
    e.finalize();
    EXPECT_NO_THROW(e.run({iota(6)}));
    EXPECT_THROW(e.run({iota(3)}), InternalError);
  }
  {
    // A launch on a device that does not exist.
    Executable e("compiled @nodev");
    e.add_input(tensor_input("x", {{4, -1}}));
    int t = e.add_slot(planned("t", {SizeExpr::constant(4)}, Device::sim(0)));
    Launch l;
    l.name = "k";
    l.device = Device::sim(7);
    l.kernel = scale_kernel(seen, Device::sim(7), 1.0f);
    l.args = {{0, true, false}, {t, true, true}};
    e.add_launch(l);
    e.set_outputs({t});
    EXPECT_EQ(error_of([&] { e.finalize(); }),
              "cannot use sim:7: sim:7 does not exist (2 sim devices)");
  }
}

TEST(ExecutableOnSim, InputsOnUnavailableDevicesAreRefused) {
  Seen seen;
  Executable e = sim_plan(seen);
  float data[4] = {};
  Tensor fake(Storage::wrap(data, sizeof data, Device::cuda(0), {}), DType::F32, {4}, {1});
  std::string err = error_of([&] { e.run({fake, iota(4)}); });
  EXPECT_EQ(err.rfind("compiled @f: input 'x' lives on cuda:0, which is unavailable: ", 0), 0u)
      << err;
  EXPECT_EQ(err.substr(err.find("unavailable: ") + 13), device_unavailable_reason(Device::cuda(0)));
}

TEST(ExecutableOnSim, ConcurrentRunsAreIndependent) {
  Seen seen;
  Executable e = sim_plan(seen);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) {
        int64_t n = 50 + t * 13 + r;
        Tensor x = iota(n);
        Tensor y = Tensor::full({n}, double(t));
        Tensor out = e.run({t % 2 ? x.to(Device::sim(0)) : x, y})[0].to(Device::cpu());
        for (int64_t i = 0; i < n; ++i) {
          if (out.data<float>()[i] != float(2 * i + t)) ++bad;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(seen.wrong_device.empty());
}

}  // namespace
}  // namespace kiln::runtime
