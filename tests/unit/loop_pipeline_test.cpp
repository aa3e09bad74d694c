// The loop pipeline (passes/schedule/loop_pipeline.h): its passes per target
// kind, printing and timing through the shared pass runner, the verifier
// between passes naming the pass that broke a kernel, and gpu_map: the
// mapped kernels (one thread per iteration in blocks, or one block of
// barrier phases) compute what the unmapped ones compute.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/loop/loop_eval.h"
#include "ir/loop/simplify.h"
#include "ir/loop/verifier.h"
#include "ir/loop/visitor.h"
#include "lower_test_util.h"
#include "passes/schedule/loop_pipeline.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {
namespace {

using namespace kiln::loop;  // NOLINT

Expr var(const std::string& n) {
  return Var::make(i64_t(), n);
}
Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}

// y[i] = x[i] * 2 for i < n (n a kernel parameter).
Kernel scale_kernel() {
  Kernel k;
  k.name = "scale";
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  k.buffers = {x, y};
  k.scalars = {var("n")};
  k.body = For::make(var("i"), make_int(0), var("n"), ForKind::Serial,
                     Store::make(y, var("i"), Load::make(x, var("i")) * f32(2)));
  return k;
}

// Two phases: m[r] = max over row r of x (rows of 5), then y[r, c] = x[r, c] - m[r].
Kernel two_phase_kernel() {
  Kernel k;
  k.name = "center";
  Buf x = make_buf("x", DType::F32), m = make_buf("m", DType::F32), y = make_buf("y", DType::F32);
  k.buffers = {x, m, y};
  k.scalars = {var("n")};
  Expr r = var("r"), c = var("c"), r2 = var("r2");
  Stmt maxes = For::make(
      r, make_int(0), var("n"), ForKind::Serial,
      Block::make(
          {Store::make(m, r, Load::make(x, r * make_int(5))),
           For::make(
               c, make_int(1), make_int(4), ForKind::Serial,
               Store::make(m, r, max(Load::make(m, r), Load::make(x, r * make_int(5) + c))))}));
  Stmt diff = For::make(r2, make_int(0), var("n") * make_int(5), ForKind::Serial,
                        Store::make(y, r2, Load::make(x, r2) - Load::make(m, r2 / make_int(5))));
  k.body = Block::make({maxes, diff});
  return k;
}

LoopPipelineOptions cpu_options() {
  LoopPipelineOptions o;
  o.target = Target::for_cpu(CpuTarget{});
  return o;
}

LoopPipelineOptions gpu_options() {
  LoopPipelineOptions o;
  o.target = Target::for_gpu(GpuTarget{});
  return o;
}

std::vector<std::string> names(const std::vector<LoopPass>& passes) {
  std::vector<std::string> out;
  for (const LoopPass& p : passes) out.push_back(p.name);
  return out;
}

TEST(LoopPipeline, OneListPerTargetKind) {
  EXPECT_EQ(names(loop_pipeline(cpu_options())),
            (std::vector<std::string>{"default-schedule", "loop-simplify"}));
  LoopPipelineOptions unscheduled = cpu_options();
  unscheduled.schedule = false;
  EXPECT_EQ(names(loop_pipeline(unscheduled)), (std::vector<std::string>{"loop-simplify"}));
  EXPECT_EQ(names(loop_pipeline(gpu_options())),
            (std::vector<std::string>{"gpu-pointwise", "gpu-reduce", "gpu-map", "loop-simplify"}));
  LoopPipelineOptions gpu_unscheduled = gpu_options();
  gpu_unscheduled.schedule = false;  // a GPU kernel is mapped regardless
  EXPECT_EQ(names(loop_pipeline(gpu_unscheduled)),
            (std::vector<std::string>{"gpu-map", "loop-simplify"}));
}

TEST(LoopPipeline, CpuPipelineIsTheDefaultScheduleThenSimplify) {
  LoopProgram p{{scale_kernel()}, {ir::OpCategory::Elementwise}};
  run_loop_pipeline(p, cpu_options());
  const ScheduleTarget st = cpu_schedule_target(cpu_options());
  EXPECT_EQ(st.vector_width, std::max(4, CpuTarget{}.lanes(4)));
  Kernel want = default_schedule(scale_kernel(), ir::OpCategory::Elementwise, st);
  want.body = simplify(want.body);
  EXPECT_EQ(to_string(p.kernels[0]), to_string(want));
}

TEST(LoopPipeline, PrintsEachPassAndTimesThem) {
  LoopProgram p{{scale_kernel()}, {ir::OpCategory::Elementwise}};
  std::ostringstream out;
  PipelineOptions print;
  print.print_after_all = true;
  print.time_passes = true;
  print.out = &out;
  run_loop_pipeline(p, cpu_options(), print);
  std::string s = out.str();
  size_t sched = s.find("// -----// IR after default-schedule //----- //\nkernel scale");
  size_t simp = s.find("// -----// IR after loop-simplify //----- //");
  size_t timing = s.find("// -----// Pass timing //----- //");
  ASSERT_NE(sched, std::string::npos) << s;
  ASSERT_NE(simp, std::string::npos) << s;
  ASSERT_NE(timing, std::string::npos) << s;
  EXPECT_LT(sched, simp);
  EXPECT_LT(simp, timing);
  EXPECT_NE(s.find("ramp("), std::string::npos) << s;  // the vectorized kernel was printed
  EXPECT_NE(s.find("default-schedule"), std::string::npos);
}

TEST(LoopPipeline, VerifierNamesThePassThatBrokeAKernel) {
  // A pass that stores into a buffer the kernel does not have.
  LoopPass fine = {"fine", [](LoopProgram&) { return false; }};
  LoopPass breaks = {"break-scope", [](LoopProgram& p) {
                       Buf stray = make_buf("stray", DType::F32);
                       p.kernels[0].body = Block::make(
                           {p.kernels[0].body, Store::make(stray, make_int(0), f32(1))});
                       return true;
                     }};
  LoopPass after = {"after", [](LoopProgram&) { return false; }};
  PipelineOptions o;
  o.verify_each = true;
  LoopProgram p{{scale_kernel()}, {ir::OpCategory::Elementwise}};
  try {
    run_passes<LoopProgram>(p, {fine, breaks, after}, loop_hooks(), o);
    FAIL() << "expected an internal error";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("loop pipeline: pass 'break-scope' left an invalid kernel"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("stray"), std::string::npos) << msg;
  }
  // Without verification between passes the result is still checked once.
  o.verify_each = false;
  LoopProgram q{{scale_kernel()}, {ir::OpCategory::Elementwise}};
  try {
    run_passes<LoopProgram>(q, {fine, breaks, after}, loop_hooks(), o);
    FAIL() << "expected an internal error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("KILN_VERIFY_PASSES=1 names it"), std::string::npos)
        << e.what();
  }
  // An invalid input is the caller's error, not a pass's.
  o.verify_each = true;
  LoopProgram bad{{scale_kernel()}, {ir::OpCategory::Elementwise}};
  breaks.run(bad);
  EXPECT_THROW(
      {
        try {
          run_passes<LoopProgram>(bad, {fine}, loop_hooks(), o);
        } catch (const InternalError&) {
          FAIL() << "an invalid input is not an internal error";
        }
      },
      Error);
}

// Runs `k` on x (n rows of 5 for two_phase, n elements for scale).
Tensor run_kernel(const Kernel& k, const Tensor& x, int64_t n, bool two_phase) {
  Tensor y = Tensor::zeros({x.numel()}, DType::F32);
  std::vector<Tensor> bufs = {x, y};
  if (two_phase) bufs = {x, Tensor::zeros({std::max<int64_t>(n, 1)}, DType::F32), y};
  std::vector<int64_t> scalars = {n};
  eval_kernel(k, bufs, scalars);
  return y;
}

int count_loops(const Stmt& s, ForKind kind) {
  struct Counter : IRVisitor {
    using IRVisitor::visit_node;
    ForKind kind;
    int n = 0;
    void visit_node(const For* op) override {
      if (op->for_kind == kind) ++n;
      IRVisitor::visit_node(op);
    }
  } c;
  c.kind = kind;
  c.visit(s);
  return c.n;
}

TEST(GpuMap, OneLoopKernelGetsAThreadPerIteration) {
  Kernel k = scale_kernel();
  Kernel m = gpu_map(k, GpuTarget{});
  verify_kernel(m);
  EXPECT_EQ(to_string(m.body),
            "for (i_blk, 0, ((n + 255) / 256)) gpu_block {\n"
            "  for (i_thr, 0, 256) gpu_thread {\n"
            "    if ((((i_blk * 256) + i_thr) < n)) {\n"
            "      y[((i_blk * 256) + i_thr)] = (x[((i_blk * 256) + i_thr)] * 2.0f)\n"
            "    }\n"
            "  }\n"
            "}\n");
  for (int64_t n : {0, 1, 7, 256, 257, 1023}) {
    Tensor x = test::random_tensor({n}, DType::F32, uint64_t(n) + 1);
    EXPECT_TRUE(run_kernel(m, x, n, false).equal(run_kernel(k, x, n, false))) << n;
  }
  // Mapped once: a second mapping leaves it alone.
  EXPECT_TRUE(gpu_map(m, GpuTarget{}).body.same_as(m.body));
}

TEST(GpuMap, ThreadsPerBlockFollowTheTarget) {
  GpuTarget small;
  small.max_threads_per_block = 64;
  Kernel m = gpu_map(scale_kernel(), small);
  EXPECT_NE(to_string(m.body).find("for (i_thr, 0, 64) gpu_thread"), std::string::npos)
      << to_string(m.body);
}

TEST(GpuMap, PhasesRunInOneBlockSeparatedByBarriers) {
  Kernel k = two_phase_kernel();
  Kernel m = gpu_map(k, GpuTarget{});
  verify_kernel(m);
  std::string text = to_string(m.body);
  EXPECT_EQ(count_loops(m.body, ForKind::GpuBlock), 1) << text;
  EXPECT_EQ(count_loops(m.body, ForKind::GpuThread), 2) << text;
  EXPECT_NE(text.find("for (gpu_blk, 0, 1) gpu_block"), std::string::npos) << text;
  EXPECT_NE(text.find("barrier"), std::string::npos) << text;
  for (int64_t n : {0, 1, 3, 300}) {
    Tensor x = test::random_tensor({n * 5}, DType::F32, uint64_t(n) + 7);
    EXPECT_TRUE(run_kernel(m, x, n, true).equal(run_kernel(k, x, n, true))) << n;
  }
}

TEST(GpuMap, StatementsThatAreNotLoopsRunOnThreadZero) {
  Kernel k;
  k.name = "one";
  Buf y = make_buf("y", DType::F32);
  k.buffers = {y};
  k.body = Store::make(y, make_int(0), f32(3));
  Kernel m = gpu_map(k, GpuTarget{});
  verify_kernel(m);
  EXPECT_EQ(to_string(m.body),
            "for (gpu_blk, 0, 1) gpu_block {\n"
            "  for (gpu_thr0, 0, 256) gpu_thread {\n"
            "    if ((gpu_thr0 == 0)) {\n"
            "      y[0] = 3.0f\n"
            "    }\n"
            "  }\n"
            "}\n");
  Tensor out = Tensor::zeros({1}, DType::F32);
  std::vector<Tensor> bufs = {out};
  eval_kernel(m, bufs, {});
  EXPECT_EQ(out.get(std::vector<int64_t>{0}), 3.0);
}

}  // namespace
}  // namespace kiln::passes
