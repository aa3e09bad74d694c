// The loop-IR verifier: kernels that keep every rule pass (a GPU-mapped nest
// with barrier phases, nested parallel loops, names reused by sibling
// scopes), and for each rule a hand-built kernel that breaks it, with the
// message naming the kernel, the rule and the offending node.
#include <gtest/gtest.h>

#include "ir/loop/loop_eval.h"
#include "ir/loop/verifier.h"
#include "ir/loop/visitor.h"
#include "ir/loop/warp.h"
#include "kiln/error.h"

namespace kiln::loop {
namespace {

Expr var(const char* name, VType t = i64_t()) {
  return Var::make(t, name);
}
Expr i64(int64_t v) {
  return make_int(v);
}
Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}
Stmt loop(const char* v, Expr extent, ForKind kind, Stmt body) {
  return For::make(var(v), i64(0), std::move(extent), kind, std::move(body));
}

// The verifier's message for `k`, or "" when it passes.
std::string problems(const Kernel& k) {
  try {
    verify_kernel(k);
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error instead of kiln::Error: " << e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

class LoopVerifier : public ::testing::Test {
 protected:
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr i = var("i"), n = var("n");
  Kernel kernel(Stmt body) { return Kernel{"k", {x, y}, {n}, std::move(body)}; }
  Stmt copy(Expr at) { return Store::make(y, at, Load::make(x, at)); }
};

TEST_F(LoopVerifier, ValidKernelsPass) {
  EXPECT_EQ(problems(kernel(loop("i", n, ForKind::Parallel, copy(i)))), "");
  // A GPU mapping: one block per 32 elements, a shared tile written by one
  // thread loop and read by the next after a barrier.
  Buf tile = make_buf("tile", DType::F32);
  Expr b = var("b"), t = var("t");
  Stmt phase1 =
      loop("t", i64(32), ForKind::GpuThread, Store::make(tile, t, Load::make(x, b * 32 + t)));
  Stmt phase2 = loop("t", i64(32), ForKind::GpuThread,
                     Store::make(y, b * 32 + t, Load::make(tile, i64(31) - t)));
  Stmt gpu = loop("b", n, ForKind::GpuBlock,
                  Allocate::make(tile, i64(32), MemoryScope::GpuShared,
                                 Block::make({phase1, Barrier::make(), phase2})));
  EXPECT_EQ(problems(kernel(gpu)), "");
  // Nested parallel loops run (the inner one serially); siblings reuse names;
  // a Let and a LetStmt bind names seen nowhere else.
  Expr j = var("j"), k = var("k"), v = var("v", {DType::F32, 1});
  Stmt nested =
      loop("i", n, ForKind::Parallel, loop("j", i64(4), ForKind::Parallel, copy(i * 4 + j)));
  Stmt lets = LetStmt::make(k, n * 2, Store::make(y, k, Let::make(v, f32(1), v)));
  Stmt siblings = Block::make({loop("i", n, ForKind::Serial, copy(i)),
                               loop("i", i64(8), ForKind::Vectorized, copy(i)),
                               loop("i", n, ForKind::Unrolled, copy(i)), lets});
  EXPECT_EQ(problems(kernel(Block::make({nested, siblings}))), "");
}

TEST_F(LoopVerifier, KernelSignature) {
  Kernel k = kernel(copy(i64(0)));
  k.name = "";
  EXPECT_HAS(problems(k), "kernel-signature: the kernel has no name");
  k = kernel(copy(i64(0)));
  k.buffers.push_back(nullptr);
  EXPECT_HAS(problems(k), "kernel-signature: buffer parameter 2 is null");
  k = kernel(copy(i64(0)));
  k.scalars.push_back(i64(3));
  EXPECT_HAS(problems(k), "kernel-signature: scalar parameter 1 (3) is not a scalar Var");
  k = kernel(copy(i64(0)));
  k.buffers.push_back(x);
  EXPECT_HAS(problems(k), "kernel-signature: buffer 'x' is a parameter twice");
}

TEST_F(LoopVerifier, UnboundVariable) {
  std::string msg = problems(kernel(loop("i", n, ForKind::Serial, copy(var("j")))));
  EXPECT_HAS(msg, "verify: loop kernel 'k' is invalid:");
  EXPECT_HAS(msg, "unbound-variable: 'j' is read but is no kernel scalar");
  EXPECT_HAS(msg, "at: j\n    in: y[j] = x[j]");
  // A loop's bounds are outside its scope; so is a Let's own value.
  msg = problems(kernel(For::make(i, i64(0), i, ForKind::Serial, copy(i))));
  EXPECT_HAS(msg, "unbound-variable: 'i'");
  EXPECT_HAS(msg, "at: i\n    in: for (i, 0, i) {");
  Expr j = var("j");
  msg = problems(kernel(Store::make(y, i64(0), Let::make(j, j + i64(1), f32(0)))));
  EXPECT_HAS(msg, "unbound-variable: 'j'");
}

TEST_F(LoopVerifier, VariableType) {
  Expr n32 = var("n", {DType::I32, 1});
  std::string msg = problems(kernel(Store::make(y, i64(0), Cast::make({DType::F32, 1}, n32))));
  EXPECT_HAS(msg, "variable-type: 'n' is read as i32 but bound as i64");
  EXPECT_HAS(msg, "at: n\n    in: y[0] = f32(n)");
}

TEST_F(LoopVerifier, ReboundVariable) {
  std::string msg =
      problems(kernel(loop("i", n, ForKind::Serial, loop("i", i64(4), ForKind::Serial, copy(i)))));
  EXPECT_HAS(msg, "rebound-variable: 'i' is bound again inside its own scope");
  EXPECT_HAS(msg, "at: for (i, 0, 4) {");
  EXPECT_HAS(problems(kernel(loop("n", i64(4), ForKind::Serial, copy(n)))),
             "rebound-variable: 'n'");  // a kernel scalar
  EXPECT_HAS(problems(kernel(loop("i", n, ForKind::Serial, LetStmt::make(i, i64(1), copy(i))))),
             "rebound-variable: 'i' is bound again inside its own scope\n    at: let i = 1");
  Expr k = var("k", {DType::F32, 1});
  msg = problems(kernel(Store::make(y, i64(0), Let::make(k, f32(1), Let::make(k, f32(2), k)))));
  EXPECT_HAS(msg, "rebound-variable: 'k'");
  EXPECT_HAS(msg, "at: (let k = 2.0f in k)");
  Kernel twice = kernel(copy(i64(0)));
  twice.scalars.push_back(n);
  EXPECT_HAS(problems(twice), "rebound-variable: scalar parameter 'n' is listed twice");
}

TEST_F(LoopVerifier, UnboundBuffer) {
  Buf z = make_buf("z", DType::F32);
  std::string msg = problems(kernel(Store::make(y, i64(0), Load::make(z, i64(0)))));
  EXPECT_HAS(msg,
             "unbound-buffer: 'z' is loaded but is no kernel buffer and no enclosing "
             "Allocate allocates it");
  EXPECT_HAS(msg, "at: z[0]\n    in: y[0] = z[0]");
  EXPECT_HAS(problems(kernel(Store::make(z, i64(0), f32(0)))),
             "unbound-buffer: 'z' is stored to but");
  EXPECT_HAS(problems(kernel(ExternCall::make("fill", {i64(0)}, {z}))),
             "unbound-buffer: 'z' is passed to 'fill' but");
  // A scratch buffer used after its Allocate ends.
  Stmt scoped = Allocate::make(z, i64(4), MemoryScope::Stack, Store::make(z, i64(0), f32(0)));
  msg = problems(kernel(Block::make({scoped, Store::make(y, i64(0), Load::make(z, i64(0)))})));
  EXPECT_HAS(msg, "unbound-buffer: 'z' is loaded");
}

TEST_F(LoopVerifier, ReboundBuffer) {
  std::string msg = problems(kernel(Allocate::make(x, i64(4), MemoryScope::Stack, copy(i64(0)))));
  EXPECT_HAS(msg, "rebound-buffer: 'x' is a kernel buffer");
  EXPECT_HAS(msg, "at: allocate x[f32 * 4] in stack ...");
  Buf z = make_buf("z", DType::F32);
  Stmt inner = Allocate::make(z, i64(4), MemoryScope::Stack, Store::make(z, i64(0), f32(0)));
  EXPECT_HAS(problems(kernel(Allocate::make(z, i64(4), MemoryScope::Heap, inner))),
             "rebound-buffer: 'z' is already allocated here");
}

TEST_F(LoopVerifier, BufferNames) {
  Buf x2 = make_buf("x", DType::F32);
  Kernel k = kernel(copy(i64(0)));
  k.buffers.push_back(x2);
  EXPECT_HAS(problems(k), "buffer-name: parameter 'x' has the name of another buffer in scope");
  Buf scratch = make_buf("y", DType::F32);
  std::string msg = problems(kernel(
      Allocate::make(scratch, i64(4), MemoryScope::Stack, Store::make(scratch, i64(0), f32(0)))));
  EXPECT_HAS(msg, "buffer-name: scratch buffer 'y' has the name of another buffer in scope");
  EXPECT_HAS(msg, "at: allocate y[f32 * 4] in stack ...");
  Buf t1 = make_buf("t", DType::F32), t2 = make_buf("t", DType::F32);
  auto scratch_of = [&](const Buf& t) {
    return Allocate::make(t, i64(4), MemoryScope::Stack, Store::make(t, i64(0), f32(0)));
  };
  EXPECT_HAS(problems(kernel(Allocate::make(t1, i64(4), MemoryScope::Stack, scratch_of(t2)))),
             "buffer-name: scratch buffer 't' has the name of another buffer in scope");
  // Sibling scopes may each have their own buffer of one name.
  EXPECT_EQ(problems(kernel(Block::make({scratch_of(t1), scratch_of(t2)}))), "");
}

TEST_F(LoopVerifier, GpuThreadOutsideBlock) {
  std::string msg = problems(kernel(loop("t", i64(32), ForKind::GpuThread, copy(var("t")))));
  EXPECT_HAS(msg, "gpu-thread-outside-block: a gpu_thread loop outside any gpu_block loop");
  EXPECT_HAS(msg, "at: for (t, 0, 32) gpu_thread {");
}

TEST_F(LoopVerifier, GpuBlockInsideThread) {
  Stmt inner = loop("b2", i64(2), ForKind::GpuBlock, copy(var("t")));
  Stmt s = loop("b", n, ForKind::GpuBlock, loop("t", i64(32), ForKind::GpuThread, inner));
  std::string msg = problems(kernel(s));
  EXPECT_HAS(msg, "gpu-block-inside-thread: a gpu_block loop inside a gpu_thread loop");
  EXPECT_HAS(msg, "at: for (b2, 0, 2) gpu_block {");
}

TEST_F(LoopVerifier, ParallelAndGpu) {
  Stmt gpu_in_par =
      loop("i", n, ForKind::Parallel, loop("b", i64(4), ForKind::GpuBlock, copy(var("b"))));
  EXPECT_HAS(problems(kernel(gpu_in_par)),
             "parallel-and-gpu: a gpu_block loop inside a parallel loop\n    at: for (b, 0, 4) "
             "gpu_block {");
  Stmt par_in_gpu = loop("b", n, ForKind::GpuBlock, loop("i", i64(4), ForKind::Parallel, copy(i)));
  EXPECT_HAS(problems(kernel(par_in_gpu)),
             "parallel-and-gpu: a parallel loop inside a GPU loop\n    at: for (i, 0, 4) "
             "parallel {");
}

TEST_F(LoopVerifier, BarrierPlacement) {
  std::string msg = problems(kernel(Block::make({copy(i64(0)), Barrier::make()})));
  EXPECT_HAS(msg, "barrier-placement: a barrier outside any gpu_block loop\n    at: barrier()");
  Stmt in_thread =
      loop("b", n, ForKind::GpuBlock,
           loop("t", i64(32), ForKind::GpuThread, Block::make({copy(var("t")), Barrier::make()})));
  msg = problems(kernel(in_thread));
  EXPECT_HAS(msg,
             "barrier-placement: a barrier inside a gpu_thread loop (each barrier phase is "
             "its own thread loop)");
}

TEST_F(LoopVerifier, SharedMemoryPlacement) {
  Buf tile = make_buf("tile", DType::F32);
  Stmt use = Store::make(tile, i64(0), f32(0));
  std::string msg = problems(kernel(Allocate::make(tile, i64(32), MemoryScope::GpuShared, use)));
  EXPECT_HAS(msg,
             "shared-memory-placement: 'tile' is allocated in GPU shared memory outside any "
             "gpu_block loop");
  EXPECT_HAS(msg, "at: allocate tile[f32 * 32] in gpu_shared ...");
  Stmt in_thread = loop("b", n, ForKind::GpuBlock,
                        loop("t", i64(32), ForKind::GpuThread,
                             Allocate::make(tile, i64(32), MemoryScope::GpuShared, use)));
  EXPECT_HAS(problems(kernel(in_thread)),
             "shared-memory-placement: 'tile' is allocated in GPU shared memory inside a "
             "gpu_thread loop");
}

TEST_F(LoopVerifier, GpuLocalPlacementAndAccess) {
  Buf keep = make_buf("keep", DType::F32);
  Expr b = var("b"), t = var("t");
  Stmt write = Store::make(keep, i64(0), Load::make(x, t));
  Stmt read = Store::make(y, t, Load::make(keep, i64(0)));
  // Valid: declared in the block, written and read in two phases.
  Stmt ok = loop("b", n, ForKind::GpuBlock,
                 Allocate::make(keep, i64(1), MemoryScope::GpuLocal,
                                Block::make({loop("t", i64(32), ForKind::GpuThread, write),
                                             Barrier::make(),
                                             loop("t", i64(32), ForKind::GpuThread, read)})));
  EXPECT_EQ(problems(kernel(ok)), "");
  std::string msg = problems(kernel(Allocate::make(keep, i64(1), MemoryScope::GpuLocal, write)));
  EXPECT_HAS(msg,
             "gpu-local-placement: 'keep' is allocated in GPU per-thread storage outside any "
             "gpu_block loop");
  Stmt in_thread = loop("b", n, ForKind::GpuBlock,
                        loop("t", i64(32), ForKind::GpuThread,
                             Allocate::make(keep, i64(1), MemoryScope::GpuLocal, write)));
  EXPECT_HAS(problems(kernel(in_thread)),
             "gpu-local-placement: 'keep' is allocated in GPU per-thread storage inside a "
             "gpu_thread loop (use stack scratch there)");
  // Used between the phases: whose copy?
  Stmt between = loop("b", n, ForKind::GpuBlock,
                      Allocate::make(keep, i64(1), MemoryScope::GpuLocal,
                                     Block::make({Store::make(keep, i64(0), f32(1)),
                                                  loop("t", i64(32), ForKind::GpuThread, read)})));
  msg = problems(kernel(between));
  EXPECT_HAS(msg,
             "gpu-local-access: GPU per-thread buffer 'keep' is stored to outside any gpu_thread "
             "loop (whose copy would it be?)");
  Stmt load_between =
      loop("b", n, ForKind::GpuBlock,
           Allocate::make(keep, i64(1), MemoryScope::GpuLocal,
                          Block::make({loop("t", i64(32), ForKind::GpuThread, write),
                                       Store::make(y, i64(0), Load::make(keep, i64(0)))})));
  EXPECT_HAS(problems(kernel(load_between)),
             "gpu-local-access: GPU per-thread buffer 'keep' is loaded outside any gpu_thread "
             "loop");
}

// warp_reduce_<op> (ir/loop/warp.h): a scalar over a GpuLocal copy per thread,
// in a thread loop after the one that wrote it, width a power of two <= 32.
TEST_F(LoopVerifier, WarpReduce) {
  Buf part = make_buf("part", DType::F32), mem = make_buf("mem", DType::F32);
  Expr b = var("b"), t = var("t");
  Stmt write = Store::make(part, i64(0), Load::make(x, t));
  auto kernel_with = [&](Expr reduced) {
    Stmt read = Store::make(y, t, reduced);
    return kernel(loop("b", n, ForKind::GpuBlock,
                       Allocate::make(part, i64(1), MemoryScope::GpuLocal,
                                      Block::make({loop("t", i64(64), ForKind::GpuThread, write),
                                                   loop("t", i64(64), ForKind::GpuThread, read)}))));
  };
  EXPECT_EQ(problems(kernel_with(make_warp_reduce(BinOp::Add, part, i64(0), 32))), "");
  EXPECT_HAS(problems(kernel_with(Call::make({DType::F32, 1}, "warp_reduce_max",
                                             {Load::make(part, i64(0)), i64(12)}))),
             "warp-reduce: 'warp_reduce_max' has a width that is not a constant power of two up "
             "to 32");
  EXPECT_HAS(problems(kernel_with(Call::make({DType::F32, 1}, "warp_reduce_add",
                                             {Load::make(x, t), i64(32)}))),
             "warp-reduce: 'warp_reduce_add' does not reduce an unpredicated load of a GPU "
             "per-thread (gpu_local) buffer");
  // Outside the thread loops: no lane to be.
  Stmt outside = loop(
      "b", n, ForKind::GpuBlock,
      Allocate::make(mem, i64(1), MemoryScope::GpuShared,
                     Store::make(mem, i64(0), make_warp_reduce(BinOp::Min, mem, i64(0), 32))));
  EXPECT_HAS(problems(kernel(outside)),
             "warp-reduce: 'warp_reduce_min' is outside any gpu_thread loop");
}

// The evaluator's meaning: the butterfly over the group's copies, the same
// value in every lane of a group (integers wrap, floats round per step).
TEST(LoopEvalWarp, ButterflyOverTheGroupsCopies) {
  Buf in = make_buf("in", DType::I32), out = make_buf("out", DType::I32);
  Buf part = make_buf("part", DType::I32);
  Expr t = var("t");
  for (int64_t width : {1, 4, 32}) {
    Stmt write = Store::make(part, i64(0), Load::make(in, t));
    Stmt read = Store::make(out, t, make_warp_reduce(BinOp::Add, part, i64(0), width));
    Stmt body = loop("b", i64(1), ForKind::GpuBlock,
                     Allocate::make(part, i64(1), MemoryScope::GpuLocal,
                                    Block::make({loop("t", i64(64), ForKind::GpuThread, write),
                                                 loop("t", i64(64), ForKind::GpuThread, read)})));
    Tensor a = Tensor::empty({64}, DType::I32), r = Tensor::empty({64}, DType::I32);
    for (int64_t k = 0; k < 64; ++k) {
      a.set(std::vector<int64_t>{k}, k == 5 ? 2147483647.0 : double(k));
    }
    eval_stmt(body, {{in, a}, {out, r}});
    for (int64_t k = 0; k < 64; ++k) {
      int64_t base = k - k % width;
      uint32_t sum = 0;
      for (int64_t l = base; l < base + width; ++l) sum += l == 5 ? 2147483647u : uint32_t(l);
      EXPECT_EQ(int64_t(r.get(std::vector<int64_t>{k})), int64_t(int32_t(sum)))
          << "width " << width << " thread " << k;
    }
  }
}

TEST_F(LoopVerifier, ExternCallArgument) {
  Expr lanes = Ramp::make(i64(0), i64(1), 4);
  std::string msg = problems(kernel(ExternCall::make("gemm", {i64(1), lanes}, {x, y})));
  EXPECT_HAS(msg,
             "extern-call-argument: argument 1 of 'gemm' is a vector (i64x4); routines take "
             "scalars");
  EXPECT_HAS(msg, "at: call gemm(x, y, 1, ramp(0, 1, 4))");
}

TEST_F(LoopVerifier, ListsTwentyProblemsThenCounts) {
  std::vector<Stmt> stores;
  for (int k = 0; k < 25; ++k) stores.push_back(copy(var("j")));  // two reads of j each
  std::string msg = problems(kernel(Block::make(stores)));
  size_t listed = 0;
  for (size_t p = msg.find("unbound-variable"); p != std::string::npos;
       p = msg.find("unbound-variable", p + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, 20u);
  EXPECT_HAS(msg, "\n  ... and 30 more");
}

}  // namespace
}  // namespace kiln::loop
