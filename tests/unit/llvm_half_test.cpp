// The LLVM backend's f16/bf16 code: every conversion to and from them
// byte-exact with the runtime's (edge values, exhaustive 16-bit inputs, values
// double rounding would get wrong), f16/bf16 arithmetic bit-exact with the
// loop-IR evaluator, and no soft-float libcall in the generated code even for
// a CPU without F16C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/loop/loop_eval.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "llvm_test_util.h"

namespace kiln::codegen {
namespace {

// ---------------------------------------------------------------- f16 / bf16 conversions

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

uint64_t dbits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
uint64_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Raw element bit patterns of `t` (low dtype_size bytes used): edge values,
// exhaustive for 8/16-bit types, ties and near-ties of f16/bf16 for the wide
// float types (where rounding twice goes wrong), plus seeded random patterns.
std::vector<uint64_t> edge_bits(DType t) {
  std::vector<uint64_t> v;
  uint64_t rng = 42 + uint64_t(t);
  // Ties (and one unit either side at 2^-30 of an ulp) of a 16-bit float
  // grid with `mant_bits` stored mantissa bits, around value x.
  auto near_ties = [&](double x, int mant_bits) {
    int e;
    std::frexp(x, &e);
    double ulp = std::ldexp(1.0, e - 1 - mant_bits);
    for (double d :
         {x + ulp / 2, x + ulp / 2 + std::ldexp(ulp, -30), x + ulp / 2 - std::ldexp(ulp, -30),
          x + std::ldexp(ulp, -30), -(x + ulp / 2)}) {
      v.push_back(t == DType::F64 ? dbits(d) : fbits(float(d)));
    }
  };
  switch (t) {
    case DType::Bool:
      return {0, 1};
    case DType::I8:
    case DType::U8:
      for (uint64_t k = 0; k < 256; ++k) v.push_back(k);
      return v;
    case DType::I16:
    case DType::F16:
    case DType::BF16:
      for (uint64_t k = 0; k < 65536; ++k) v.push_back(k);
      return v;
    case DType::I32:
    case DType::I64: {
      const int64_t wide = t == DType::I64;
      for (int64_t x : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{65504}, int64_t{65519},
                        int64_t{65520}, int64_t{65535}, int64_t{-65520}, int64_t{16777217},
                        int64_t{-16777219}, int64_t{2147483647}, int64_t{-2147483647} - 1,
                        // 2^30 + 3 * 2^22 - 1: below a bf16 tie, but f32 rounds it onto it.
                        int64_t{1086324735}, int64_t{-1086324735}}) {
        v.push_back(uint64_t(x));
      }
      if (wide) {
        for (int64_t x : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                          // 2^62 + 3 * 2^54 - 1: f64 (and f32) round it onto a bf16 tie.
                          (int64_t{1} << 62) + 3 * (int64_t{1} << 54) - 1, (int64_t{1} << 53) + 1,
                          -(int64_t{1} << 40) - 1}) {
          v.push_back(uint64_t(x));
        }
      }
      for (int k = 0; k < 300; ++k) {
        uint64_t r = splitmix(rng);
        int shift = int(r % (wide ? 63 : 31));
        int64_t x = int64_t(splitmix(rng) >> (63 - shift)) * ((r >> 32) & 1 ? -1 : 1);
        v.push_back(wide ? uint64_t(x) : uint64_t(uint32_t(int32_t(x))));
      }
      return v;
    }
    case DType::F32:
    case DType::F64: {
      const bool f64 = t == DType::F64;
      const double specials[] = {0.0,     -0.0,   1.0,      -1.5,     65504, 65519.99,
                                 65520,   1e10,   -3.4e38,  1e-40,    1e-45, 5.9604644775390625e-8,
                                 2.98e-8, 6.1e-5, INFINITY, -INFINITY};
      for (double d : specials) v.push_back(f64 ? dbits(d) : fbits(float(d)));
      if (f64) {
        for (uint64_t b :
             {uint64_t{1}, uint64_t{0x800fffffffffffff}, uint64_t{0x7ff8000000000000},
              uint64_t{0xfff8000000000001}, uint64_t{0x7ff0000000000001},
              uint64_t{0x47efffffe0000000},  // FLT_MAX + half an ulp
              uint64_t{0x47efffffdfffffff}, dbits(1e300), dbits(-1e300),
              dbits(std::ldexp(1.0, -150)), dbits(std::ldexp(1.0, -150) * (1 + 0x1p-30)),
              dbits(std::ldexp(1.0, -25)), dbits(std::ldexp(1.0, -25) * (1 + 0x1p-30)),
              dbits(1 + 0x1p-8 + 0x1p-40), dbits(1 + 0x1p-11 + 0x1p-40)}) {
          v.push_back(b);
        }
      } else {
        for (uint64_t b : {0x1u,        0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu,
                           0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff812345u, 0x3f808000u,
                           0x3f818000u, 0x3f808001u, 0x3f807fffu, 0x477ff000u, 0x477fefffu,
                           0x33000000u, 0x33000001u, 0x387fc000u, 0x38800000u, 0x7f7f8000u}) {
          v.push_back(b);
        }
      }
      for (int k = 0; k < 40; ++k) {
        uint64_t r = splitmix(rng);
        // Finite f16 / bf16 values: ties of both grids around them.
        near_ties(half_to_float(uint16_t((r & 0x7bff) | 0x0400)), 10);
        near_ties(bf16_to_float(uint16_t((r >> 16 & 0x7f7f) | 0x0080)), 7);
      }
      for (int k = 0; k < 300; ++k) {
        uint64_t r = splitmix(rng);
        if (k % 2) {  // moderate exponents, where f16/bf16 have values
          int e = int((r >> 56) % 60) - 30;
          r = f64 ? (r & 0x800fffffffffffffu) | (uint64_t(1023 + e) << 52)
                  : (r & 0x807fffffu) | (uint64_t(127 + e) << 23);
        }
        v.push_back(f64 ? r : r & 0xffffffffu);
      }
      return v;
    }
  }
  return v;
}

// The runtime's conversion of one element: the reference. Into f16/bf16 a NaN
// is the canonical quiet NaN (store_double rounds through double_to_float_odd).
void reference_convert(DType from, const char* src, DType to, char* dst) {
  if (from == to) {
    std::memcpy(dst, src, dtype_size(to));  // a copy keeps every bit
  } else if (is_floating(from)) {
    store_double(to, dst, load_as_double(from, src));
  } else {
    store_int(to, dst, load_as_int(from, src));
  }
}

// y = cast(x) over n elements, in one of three shapes: scalar loop, dense
// 8-lane vectors with a predicated tail, or masked gathers/scatters (lane k of
// chunk i touches element i + k * chunks).
Kernel cast_kernel(DType from, DType to, int shape, int64_t n) {
  Buf x = make_buf("x", from), y = make_buf("y", to);
  Expr i = var("i");
  std::string name =
      std::string("cv") + std::to_string(shape) + "_" + dtype_name(from) + "_" + dtype_name(to);
  if (shape == 0) {
    return Kernel{name,
                  {x, y},
                  {},
                  For::make(i, make_int(0), make_int(n), ForKind::Serial,
                            Store::make(y, i, Cast::make({to, 1}, Load::make(x, i))))};
  }
  const int64_t chunks = (n + 7) / 8;
  Expr idx = shape == 1 ? ramp(i * 8, 8) : Ramp::make(i, make_int(chunks), 8);
  Expr pred = idx < bcast(make_int(n), 8);
  return Kernel{
      name,
      {x, y},
      {},
      For::make(i, make_int(0), make_int(chunks), ForKind::Serial,
                Store::make(y, idx, Cast::make({to, 8}, Load::make(x, idx, pred)), pred))};
}

TEST_F(LlvmBackendTest, HalfAndBFloatConversionsMatchRuntimeBitExactly) {
  const DType all[] = {DType::Bool, DType::I8,  DType::U8,   DType::I16, DType::I32,
                       DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};
  std::vector<std::pair<DType, DType>> pairs;
  for (DType d : all) {
    for (DType h : {DType::F16, DType::BF16}) {
      pairs.push_back({d, h});
      if (d != DType::F16 && d != DType::BF16) pairs.push_back({h, d});
    }
  }
  CodegenOptions generic;  // no F16C, no AVX: still no libcalls
  generic.cpu = "x86-64";
  for (const CodegenOptions& options : {CodegenOptions{}, generic}) {
    std::vector<Kernel> kernels;
    std::vector<std::vector<uint64_t>> inputs;
    for (auto [from, to] : pairs) {
      std::vector<uint64_t> in = edge_bits(from);
      for (int shape = 0; shape < 3; ++shape) {
        kernels.push_back(cast_kernel(from, to, shape, int64_t(in.size())));
        inputs.push_back(in);
      }
    }
    std::string as = backend_->dump(kernels, options, DumpStage::Asm);
    for (const char* libcall : {"__truncsfbf2", "__truncdfbf2", "__truncsfhf2", "__truncdfhf2",
                                "__extendhfsf2", "__extendbfsf2", "kiln_jit"}) {
      EXPECT_EQ(as.find(libcall), std::string::npos)
          << libcall << " called (cpu '" << options.cpu << "')";
    }
    modules_.push_back(backend_->compile(kernels, options));
    for (size_t k = 0; k < kernels.size(); ++k) {
      DType from = kernels[k].buffers[0]->dtype, to = kernels[k].buffers[1]->dtype;
      const std::vector<uint64_t>& in = inputs[k];
      const auto n = int64_t(in.size());
      const size_t fs = dtype_size(from), ts = dtype_size(to);
      Tensor xt = Tensor::zeros({n}, from), yt = Tensor::zeros({n}, to);
      char* xp = static_cast<char*>(xt.data_ptr());
      for (int64_t j = 0; j < n; ++j) std::memcpy(xp + j * fs, &in[size_t(j)], fs);
      run(modules_.back()->lookup(kernels[k].name), {xt, yt});
      const char* yp = static_cast<const char*>(yt.data_ptr());
      // The loop-IR evaluator must agree bit for bit (its own vector kernel).
      // (Not for copies: it stores through double, canonicalizing NaN payloads.)
      // i64 sources are left out: under the sanitizer build loop_eval's i64 ->
      // bf16 path disagrees with the runtime (open bug, see the session note);
      // LLVM's own results are still checked against the runtime below.
      if (options.cpu.empty() && k % 3 == 1 && from != to && from != DType::I64) {
        Tensor et = Tensor::zeros({n}, to);
        std::vector<Tensor> bufs{xt, et};
        eval_kernel(kernels[k], bufs, {});
        EXPECT_EQ(std::memcmp(et.data_ptr(), yp, size_t(n) * ts), 0)
            << kernels[k].name << ": loop evaluator differs";
      }
      int failures = 0;
      for (int64_t j = 0; j < n && failures < 5; ++j) {
        uint64_t want = 0, got = 0;
        reference_convert(from, xp + j * fs, to, reinterpret_cast<char*>(&want));
        std::memcpy(&got, yp + j * ts, ts);
        if (got != want) {
          ++failures;
          ADD_FAILURE() << kernels[k].name << " (cpu '" << options.cpu << "') input bits 0x"
                        << std::hex << in[size_t(j)] << ": got 0x" << got << " want 0x" << want;
        }
      }
    }
  }
}

TEST_F(LlvmBackendTest, HalfAndBFloatArithmeticMatchesLoopEvaluator) {
  const BinOp ops[] = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Min, BinOp::Max};
  for (DType t : {DType::F16, DType::BF16}) {
    // Pairs of edge values (NaN, +-inf, subnormals, the largest finite, ties).
    std::vector<uint16_t> vals = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x3c00, 0xbc00, 0x3c01,
                                  0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x7f7f,
                                  0xff7f, 0x7f80, 0x0080, 0x007f, 0x4049, 0x3f81, 0x1234, 0xc321};
    const auto n = int64_t(vals.size() * vals.size());
    Tensor at = Tensor::zeros({n}, t), bt = Tensor::zeros({n}, t);
    for (size_t p = 0; p < vals.size(); ++p) {
      for (size_t q = 0; q < vals.size(); ++q) {
        at.data<uint16_t>()[p * vals.size() + q] = vals[p];
        bt.data<uint16_t>()[p * vals.size() + q] = vals[q];
      }
    }
    std::vector<Kernel> kernels;
    for (BinOp op : ops) {
      Buf a = make_buf("a", t), b = make_buf("b", t), c = make_buf("c", t);
      Expr o = var("o");
      Expr idx = ramp(o * 8, 8);
      Expr pred = idx < bcast(make_int(n), 8);
      // c = (a op b) op 1.5: a constant, two roundings, a predicated tail.
      Expr r =
          Binary::make(op, Binary::make(op, Load::make(a, idx, pred), Load::make(b, idx, pred)),
                       bcast(FloatImm::make({t, 1}, 1.5), 8));
      kernels.push_back(Kernel{std::string("ar_") + dtype_name(t) + "_" + std::to_string(int(op)),
                               {a, b, c},
                               {},
                               For::make(o, make_int(0), make_int((n + 7) / 8), ForKind::Serial,
                                         Store::make(c, idx, r, pred))});
    }
    modules_.push_back(backend_->compile(kernels, {}));
    for (const Kernel& k : kernels) {
      Tensor got = Tensor::zeros({n}, t), want = Tensor::zeros({n}, t);
      run(modules_.back()->lookup(k.name), {at, bt, got});
      std::vector<Tensor> bufs{at, bt, want};
      eval_kernel(k, bufs, {});
      for (int64_t j = 0; j < n; ++j) {
        uint16_t g = got.data<uint16_t>()[j], w = want.data<uint16_t>()[j];
        // Which NaN an operation returns is unspecified (operands may commute).
        if (std::isnan(load_as_double(t, &w))) {
          ASSERT_TRUE(std::isnan(load_as_double(t, &g))) << k.name << " j=" << j;
          continue;
        }
        ASSERT_EQ(g, w) << k.name << " a=0x" << std::hex << at.data<uint16_t>()[j] << " b=0x"
                        << bt.data<uint16_t>()[j];
      }
    }
  }
}

}  // namespace
}  // namespace kiln::codegen
