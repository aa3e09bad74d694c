// The CUDA C emitter on hand-built GPU-mapped kernels: the text of each form
// (signature and calling convention, launch bounds, block and thread
// indices, barriers, shared and local arrays, lets, vector lanes with 128-bit
// accesses, f16 rounding, wrapping data arithmetic next to plain index
// arithmetic, constants, names made valid and unique) and the errors for
// what GPU code cannot have. Every kernel that emits is also compiled by
// NVRTC for sm_90 when NVRTC is present (skipped with the reason otherwise).
#include <gtest/gtest.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc.h"
#include "ir/loop/loop_ir.h"
#include "kiln/error.h"

namespace kiln::test {
namespace {

using namespace kiln::loop;  // NOLINT
using codegen::cuda::CudaProgram;
using codegen::cuda::emit_cuda;

Expr ivar(const std::string& n) {
  return Var::make(i64_t(), n);
}
Expr fimm(double v, DType t = DType::F32) {
  return FloatImm::make({t, 1}, v);
}

// for (i_blk, 0, (n + 255) / 256) gpu_block { for (i_thr, 0, 256) gpu_thread {
//   if (i < n) body(i) } }, i = i_blk * 256 + i_thr
Stmt over_grid(const Expr& n, const std::function<Stmt(Expr)>& body, int64_t threads = 256) {
  Expr blk = ivar("i_blk"), thr = ivar("i_thr");
  Expr i = blk * make_int(threads) + thr;
  Stmt inner = IfThenElse::make(i < n, body(i));
  Stmt t = For::make(thr, make_int(0), make_int(threads), ForKind::GpuThread, inner);
  return For::make(blk, make_int(0), (n + make_int(threads - 1)) / make_int(threads),
                   ForKind::GpuBlock, t);
}

std::string emit(const Kernel& k) {
  return emit_cuda({k}).kernels;
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

Kernel elementwise_kernel() {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Expr n = ivar("n"), a = Var::make({DType::F32, 1}, "a");
  Kernel k{"scale_exp", {x, y}, {n, a}, over_grid(n, [&](Expr i) {
             return Store::make(y, i, Call::make({DType::F32, 1}, "exp", {Load::make(x, i)}) * a);
           })};
  return k;
}

TEST(CudaEmitter, ElementwiseKernelSignatureAndIndexing) {
  Kernel k = elementwise_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s, "// scale_exp: grid ((n + 255) / 256), block 256\n");
  EXPECT_HAS(s,
             "extern \"C\" __global__ void __launch_bounds__(256, 1) scale_exp(const float* "
             "__restrict__ x, float* __restrict__ y, kiln_i64 n, kiln_i64 a_slot) {\n");
  EXPECT_HAS(s, "  const float a = kiln_slot_f32(a_slot);\n");
  EXPECT_HAS(s, "const kiln_i64 i_blk = (kiln_i64)blockIdx.x;\n");
  EXPECT_HAS(s, "const kiln_i64 i_thr = (kiln_i64)threadIdx.x;\n");
  EXPECT_HAS(s, "if (((i_blk * 256) + i_thr) < n) {\n");
  EXPECT_HAS(s, "y[(i_blk * 256) + i_thr] = kiln_exp(x[(i_blk * 256) + i_thr]) * a;\n");
  EXPECT_EQ(emit_cuda({k}).entries[0].block, 256);
  EXPECT_EQ(emit_cuda({k}).source().rfind("#include \"kiln_prelude.cuh\"\n", 0), 0u);
}

Kernel block_phases_kernel() {
  // One block: phase 1 stages x into shared memory, phase 2 reverses it.
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf tile = make_buf("tile", DType::F32);
  Expr t0 = ivar("t0"), t1 = ivar("t1");
  Stmt p0 = For::make(t0, make_int(0), make_int(128), ForKind::GpuThread,
                      Store::make(tile, t0, Load::make(x, t0)));
  Stmt p1 = For::make(t1, make_int(0), make_int(128), ForKind::GpuThread,
                      Store::make(y, t1, Load::make(tile, make_int(127) - t1)));
  Stmt body = Allocate::make(tile, make_int(128), MemoryScope::GpuShared,
                             Block::make({p0, Barrier::make(), p1}));
  Kernel k{"reverse",
           {x, y},
           {},
           For::make(ivar("b"), make_int(0), make_int(1), ForKind::GpuBlock, body)};
  return k;
}

TEST(CudaEmitter, BlockPhasesSharedMemoryAndBarriers) {
  Kernel k = block_phases_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s, "__launch_bounds__(128, 1) reverse(");
  EXPECT_HAS(s, "KILN_SHARED(float, tile, 128);\n");
  EXPECT_HAS(s, "tile[t0] = x[t0];\n");
  EXPECT_HAS(s, "\n    __syncthreads();\n");  // at block level
  EXPECT_HAS(s, "y[t1] = tile[127 - t1];\n");
  EXPECT_LT(s.find("tile[t0]"), s.find("__syncthreads"));
  EXPECT_LT(s.find("__syncthreads"), s.find("y[t1]"));
}

Kernel row_sum_kernel() {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf acc = make_buf("acc", DType::F32);
  Expr n = ivar("n"), d = ivar("d"), r = ivar("r"), m = Var::make({DType::F32, 1}, "m");
  Kernel k{
      "row_sum", {x, y}, {n, d}, over_grid(n, [&](Expr i) {
        Stmt init = Store::make(acc, make_int(0), fimm(0));
        Stmt loop = For::make(
            r, make_int(0), d, ForKind::Serial,
            Store::make(acc, make_int(0), Load::make(acc, make_int(0)) + Load::make(x, i * d + r)));
        Expr mean = Let::make(m, Load::make(acc, make_int(0)), m / Cast::make({DType::F32, 1}, d));
        return Allocate::make(acc, make_int(1), MemoryScope::Stack,
                              Block::make({init, loop, Store::make(y, i, mean)}));
      })};
  return k;
}

TEST(CudaEmitter, LocalArraysLetsAndSerialLoops) {
  Kernel k = row_sum_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s, "float acc[1];\n");
  EXPECT_HAS(s, "acc[0] = 0.0f;\n");
  EXPECT_HAS(s, "KILN_NO_UNROLL\n        for (kiln_i64 r = 0; r < d; ++r) {\n");
  EXPECT_HAS(s, "acc[0] = acc[0] + x[(((i_blk * 256) + i_thr) * d) + r];\n");
  EXPECT_HAS(s, "const float m = acc[0];\n");
  EXPECT_HAS(s, "y[(i_blk * 256) + i_thr] = m / (float)d;\n");
}

Kernel vector_lanes_kernel() {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32), z = make_buf("z", DType::F32);
  Buf loc = make_buf("loc", DType::F32);
  Expr n = ivar("n");
  Kernel k{"vec4", {x, y, z}, {n}, over_grid(n, [&](Expr i) {
             Expr base = i * make_int(4);
             Expr dense = Ramp::make(base, make_int(1), 4);
             Expr two = Broadcast::make(fimm(2), 4);
             Stmt st = Store::make(y, dense, Load::make(x, dense) * two);
             // Strided and predicated lanes go one by one.
             Expr strided = Ramp::make(i, n, 4);
             Expr mask = Ramp::make(i, make_int(1), 4) < Broadcast::make(n, 4);
             Stmt st2 = Store::make(z, strided, Load::make(x, dense, mask));
             // A local array is never accessed through a pointer (it stays in registers).
             Stmt st3 = Allocate::make(
                 loc, make_int(4), MemoryScope::Stack,
                 Block::make({Store::make(loc, Ramp::make(make_int(0), make_int(1), 4),
                                          Load::make(x, dense)),
                              Store::make(y, i, Load::make(loc, make_int(3)))}));
             return Block::make({st, st2, st3});
           })};
  return k;
}

TEST(CudaEmitter, DenseLanesMoveAs128BitAccessesOthersPerLane) {
  Kernel k = vector_lanes_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s,
             "const kiln_vec<float, 4> x_v = kiln_vload<float, 4>(x + (((i_blk * 256) + i_thr) * "
             "4));\n");
  EXPECT_HAS(s,
             "const kiln_vec<float, 4> y_st = {{x_v.v[0] * 2.0f, x_v.v[1] * 2.0f, x_v.v[2] * "
             "2.0f, x_v.v[3] * 2.0f}};\n");
  EXPECT_HAS(s, "kiln_vstore<float, 4>(y + (((i_blk * 256) + i_thr) * 4), y_st);\n");
  // Masked lanes read nothing; the base of a ramp is computed once.
  EXPECT_HAS(s, "const kiln_i64 base = ((i_blk * 256) + i_thr) * 4;\n");
  EXPECT_HAS(s, ", ((base_2 + 1) < n) ? x[base + 1] : 0.0f, ");
  EXPECT_HAS(s, "z[base_3 + 3 * n] = z_st.v[3];\n");
  EXPECT_HAS(s, "loc[2] = loc_st.v[2];\n");
  EXPECT_EQ(s.find("kiln_vload<float, 4>(loc"), std::string::npos);
}

Kernel half_kernel() {
  Buf x = make_buf("x", DType::F16), y = make_buf("y", DType::F16);
  Buf b = make_buf("b", DType::BF16);
  Expr n = ivar("n");
  Kernel k{"half_ops", {x, b, y}, {n}, over_grid(n, [&](Expr i) {
             Expr h = Load::make(x, i);
             Expr v = (h + h) * fimm(0.1, DType::F16);
             Expr w = Cast::make({DType::F16, 1}, Load::make(b, i));
             return Store::make(y, i, Call::make({DType::F16, 1}, "tanh", {v}) + w);
           })};
  return k;
}

TEST(CudaEmitter, HalfPrecisionRoundsAfterEveryOperation) {
  Kernel k = half_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s,
             "const kiln_f16* __restrict__ x, const kiln_bf16* __restrict__ b, kiln_f16* "
             "__restrict__ y");
  // 0.1 as an f16 is 0.0999755859375.
  EXPECT_HAS(s,
             "kiln_round_f16(kiln_round_f16(kiln_f16_to_f32(x[(i_blk * 256) + i_thr]) + "
             "kiln_f16_to_f32(x[(i_blk * 256) + i_thr])) * 0.099975586f)");
  EXPECT_EQ(s.find("kiln_round_f16(("), std::string::npos);
  EXPECT_HAS(s, "kiln_round_f16(kiln_tanh(");
  EXPECT_HAS(s, "kiln_round_f16(kiln_bf16_to_f32(b[(i_blk * 256) + i_thr]))");
  EXPECT_HAS(s, "y[(i_blk * 256) + i_thr] = kiln_f32_to_f16(kiln_round_f16(");
}

Kernel int_kernel() {
  Buf x = make_buf("x", DType::I32), y = make_buf("y", DType::I32), z = make_buf("z", DType::I8);
  Expr n = ivar("n");
  Kernel k{"ints", {x, y, z}, {n}, over_grid(n, [&](Expr i) {
             Expr v = Load::make(x, i);
             Stmt a = Store::make(y, i, v * IntImm::make({DType::I32, 1}, 3) + v / v);
             Stmt c = Store::make(
                 z, i, Cast::make({DType::I8, 1}, v) + IntImm::make({DType::I8, 1}, 100));
             return Block::make({a, c});
           })};
  return k;
}

TEST(CudaEmitter, DataArithmeticWrapsIndexArithmeticStaysPlain) {
  Kernel k = int_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s,
             "y[(i_blk * 256) + i_thr] = kiln_add_wrap(kiln_mul_wrap(x[(i_blk * 256) + i_thr], "
             "3), kiln_div(x[(i_blk * 256) + i_thr], x[(i_blk * 256) + i_thr]));\n");
  EXPECT_HAS(s, "z[(i_blk * 256) + i_thr] = (kiln_i8)((kiln_i8)x[(i_blk * 256) + i_thr] + 100);\n");
  // The grid's index arithmetic is plain C, as is the floor division by a constant.
  EXPECT_HAS(s, "grid ((n + 255) / 256)");
}

Kernel constants_kernel() {
  Buf x = make_buf("x", DType::F32), m = make_buf("m", DType::Bool), y = make_buf("y", DType::I64);
  Buf f = make_buf("f", DType::F64);
  Expr n = ivar("n");
  const double inf = std::numeric_limits<double>::infinity();
  Kernel k{"consts", {x, m, y, f}, {n}, over_grid(n, [&](Expr i) {
             Expr v = Load::make(x, i);
             Expr pick = Select::make(Load::make(m, i) && (v != v), fimm(-inf), fimm(1e-5));
             Stmt a = Store::make(y, i, Cast::make(i64_t(), pick) + make_int(int64_t(1) << 40));
             Stmt b = Store::make(m, i, Not::make(Load::make(m, i)));
             Stmt c = Store::make(f, i, Cast::make({DType::F64, 1}, v) * fimm(0.1, DType::F64));
             return Block::make({a, b, c});
           })};
  return k;
}

TEST(CudaEmitter, ConstantsCastsAndBooleans) {
  Kernel k = constants_kernel();
  std::string s = emit(k);
  EXPECT_HAS(s, "(const float* __restrict__ x, kiln_u8* __restrict__ m, kiln_i64* __restrict__ y");
  EXPECT_HAS(s,
             "(((m[(i_blk * 256) + i_thr] != 0) && (x[(i_blk * 256) + i_thr] != x[(i_blk * 256) "
             "+ i_thr])) ? (-INFINITY) : 1e-05f)");
  EXPECT_HAS(s, "kiln_f32_to_i64_sat(");
  EXPECT_HAS(s, "1099511627776LL");
  EXPECT_HAS(s, "m[(i_blk * 256) + i_thr] = (kiln_u8)(!(m[(i_blk * 256) + i_thr] != 0));\n");
  EXPECT_HAS(s, "f[(i_blk * 256) + i_thr] = (double)x[(i_blk * 256) + i_thr] * 0.1;\n");
}

// Names that are not C identifiers, or are reserved.
Kernel awkward_names_kernel() {
  Buf x = make_buf("x.in", DType::F32), y = make_buf("int", DType::F32);
  Expr n = ivar("kiln_n"), t = ivar("threadIdx");
  Stmt body = For::make(t, make_int(0), n, ForKind::Serial, Store::make(y, t, Load::make(x, t)));
  return Kernel{"3d.copy", {x, y}, {n}, body};
}

TEST(CudaEmitter, NamesBecomeValidUniqueIdentifiers) {
  CudaProgram p = emit_cuda({awkward_names_kernel(), awkward_names_kernel()});
  EXPECT_EQ(p.entries[0].symbol, "v_3d_copy");
  EXPECT_EQ(p.entries[1].symbol, "v_3d_copy_2");
  EXPECT_EQ(p.entries[0].block, 1);  // no GPU loops: one thread
  EXPECT_HAS(p.kernels, "// 3d.copy: one thread\n");
  EXPECT_HAS(p.kernels,
             "__launch_bounds__(1, 1) v_3d_copy(const float* __restrict__ x_in, float* "
             "__restrict__ v_int, kiln_i64 v_kiln_n)");
  EXPECT_HAS(p.kernels, "for (kiln_i64 v_threadIdx = 0; v_threadIdx < v_kiln_n; ++v_threadIdx)");
}

TEST(CudaEmitter, WhatGpuCodeCannotHaveIsAnErrorNamingTheKernel) {
  Buf x = make_buf("x", DType::F32), s = make_buf("scratch", DType::F32);
  Expr n = ivar("n");
  auto expect_error = [&](Stmt body, const std::string& what) {
    Kernel k{"bad_kernel", {x}, {n}, body};
    try {
      emit_cuda({k});
      ADD_FAILURE() << "no error for " << what;
    } catch (const InternalError& e) {
      ADD_FAILURE() << "an internal error for " << what << ": " << e.what();
    } catch (const Error& e) {
      EXPECT_HAS(std::string(e.what()), "kernel 'bad_kernel' cannot be compiled for a GPU");
      EXPECT_HAS(std::string(e.what()), what);
    }
  };
  Stmt use = Store::make(s, make_int(0), fimm(1));
  expect_error(Allocate::make(s, n, MemoryScope::Heap, use), "heap scratch 'scratch'");
  expect_error(Allocate::make(s, n, MemoryScope::Stack, use),
               "scratch 'scratch' of a size known only at run time");
  expect_error(ExternCall::make("kiln_gemm", {n}, {x}), "an extern call 'kiln_gemm'");
  // A store at block level (every thread would store) is not mapped IR: a Kiln bug.
  Kernel k{"block_store",
           {x},
           {},
           For::make(ivar("b"), make_int(0), make_int(1), ForKind::GpuBlock,
                     Store::make(x, make_int(0), fimm(1)))};
  EXPECT_THROW(emit_cuda({k}), InternalError);
}

// Every kernel above in one program (ctest runs each test in a process of
// its own, so the kernels are built again here).
TEST(CudaEmitter, EveryProgramCompilesWithNvrtc) {
  std::string why = codegen::cuda::nvrtc_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  CudaProgram p = emit_cuda({elementwise_kernel(), block_phases_kernel(), row_sum_kernel(),
                             vector_lanes_kernel(), half_kernel(), int_kernel(), constants_kernel(),
                             awkward_names_kernel()});
  codegen::cuda::CudaImage image = codegen::cuda::nvrtc_compile(p.source(), "emitter_test.cu", {});
  EXPECT_TRUE(image.cubin);
  EXPECT_EQ(image.arch, "sm_90");
  ASSERT_EQ(image.resources.size(), p.entries.size()) << image.log;
  for (const codegen::cuda::KernelResources& r : image.resources) {
    EXPECT_EQ(r.spill_stores + r.spill_loads, 0) << r.symbol << "\n" << image.log;
  }
  for (const codegen::cuda::KernelResources& r : image.resources) {
    if (r.symbol == "reverse") {
      EXPECT_EQ(r.shared, 128 * 4) << image.log;  // its tile
    }
  }
}

}  // namespace
}  // namespace kiln::test
