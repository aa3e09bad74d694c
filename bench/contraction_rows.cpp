// Kiln's SGEMM and conv2d rows (see contraction_rows.h). Each builds its graph
// with the C++ builder, compiles it once, checks a sample of the first call's
// output against a double-precision sum, then times calls under the row's
// budget; the output comes from Kiln's caching allocator as in kiln_rows.cpp.
#include "bench/contraction_rows.h"

#include <algorithm>

#include "bench/bench_data.h"

namespace kiln::bench {

namespace {

double since(int64_t t0) {
  return static_cast<double>(monotonic_ns() - t0) * 1e-9;
}

// Up to `count` indices spread over [0, n), both ends included: check_sgemm
// takes every (row, column) pair of them.
std::vector<int64_t> spread(int64_t n, int count = 16) {
  std::vector<int64_t> v;
  for (int i = 0; i < count; ++i) v.push_back(std::min(n - 1, i * n / (count - 1)));
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

double check_sgemm(int64_t n, const float* a, const float* b, const float* c) {
  SampleCheck chk;
  for (int64_t i : spread(n)) {
    for (int64_t j : spread(n)) {
      double want = 0;
      for (int64_t k = 0; k < n; ++k) want += double(a[i * n + k]) * double(b[k * n + j]);
      chk.add(c[i * n + j], want);
    }
  }
  return chk.max_err();
}

RowResult run_kiln_sgemm(int64_t n, const Budget& budget) {
  kiln::Builder bld("sgemm");
  kiln::Var a = bld.input("a", kiln::DType::F32, {n, n});
  kiln::Var b = bld.input("b", kiln::DType::F32, {n, n});
  kiln::Function f = bld.build({kiln::matmul(a, b)});
  int64_t t0 = monotonic_ns();
  kiln::CompiledFunction cf = kiln::compile(f);
  const double compile_s = since(t0);
  kiln::Tensor ta = hashed({n, n}, kSgemmSeedA), tb = hashed({n, n}, kSgemmSeedB);
  RowResult r = run_budgeted(cf, {ta, tb}, budget, [&](const kiln::Tensor& c) {
    return check_sgemm(n, ta.data<float>(), tb.data<float>(), c.data<float>());
  });
  r.compile_s = compile_s;
  r.kernels = cf.num_kernels();
  r.algorithm = explained_algorithms(cf);
  r.flops = 2.0 * double(n) * double(n) * double(n);
  r.input_sum = input_sum({ta, tb});
  return r;
}

std::vector<ConvShape> conv_shapes(bool smoke) {
  // key, label, cin, cout, hw, k, pad, groups, seeds
  std::vector<ConvShape> v = {
      {"resnet_3x3_64", "3x3, 64->64 ch, 56x56 (ResNet-18 conv2_x)", 64, 64, 56, 3, 1, 1, 21, 22},
      {"resnet_3x3_128", "3x3, 128->128 ch, 28x28 (ResNet-18 conv3_x)", 128, 128, 28, 3, 1, 1, 23,
       24},
      {"resnet_3x3_256", "3x3, 256->256 ch, 14x14 (ResNet-18 conv4_x)", 256, 256, 14, 3, 1, 1, 25,
       26},
      {"pointwise_1x1", "1x1, 64->256 ch, 56x56", 64, 256, 56, 1, 0, 1, 27, 28},
      {"depthwise_3x3", "depthwise 3x3, 32 ch, 112x112, groups 32 (MobileNet)", 32, 32, 112, 3, 1,
       32, 29, 30},
  };
  if (smoke) {
    for (ConvShape& s : v) {
      const bool depthwise = s.groups == s.cin;
      s.cin /= 8;
      s.cout /= 8;
      s.hw = 8;
      if (depthwise) s.groups = s.cin;
    }
  }
  return v;
}

RowResult run_kiln_conv(const ConvShape& s, const Budget& budget) {
  const int64_t cin_g = s.cin / s.groups, cout_g = s.cout / s.groups, oh = s.out_hw();
  kiln::Builder bld("conv");
  kiln::Var x = bld.input("x", kiln::DType::F32, {1, s.cin, s.hw, s.hw});
  kiln::Var w = bld.input("w", kiln::DType::F32, {s.cout, cin_g, s.k, s.k});
  kiln::Function f = bld.build({kiln::conv2d(x, w, {}, {1, 1}, {s.pad, s.pad}, {1, 1}, s.groups)});
  int64_t t0 = monotonic_ns();
  kiln::CompiledFunction cf = kiln::compile(f);
  const double compile_s = since(t0);
  kiln::Tensor tx = hashed({1, s.cin, s.hw, s.hw}, s.seed_x);
  kiln::Tensor tw = hashed({s.cout, cin_g, s.k, s.k}, s.seed_w);
  const float* xp = tx.data<float>();
  const float* wp = tw.data<float>();
  RowResult r = run_budgeted(cf, {tx, tw}, budget, [&](const kiln::Tensor& y) {
    const float* yp = y.data<float>();
    const int64_t total = s.cout * oh * oh;
    SampleCheck chk;
    for (int64_t e = 0; e < total; e += std::max<int64_t>(1, total / 509)) {
      const int64_t oc = e / (oh * oh), oy = e / oh % oh, ox = e % oh;
      const int64_t g = oc / cout_g;
      double want = 0;
      for (int64_t ic = 0; ic < cin_g; ++ic) {
        for (int64_t ky = 0; ky < s.k; ++ky) {
          for (int64_t kx = 0; kx < s.k; ++kx) {
            const int64_t iy = oy + ky - s.pad, ix = ox + kx - s.pad;
            if (iy < 0 || ix < 0 || iy >= s.hw || ix >= s.hw) continue;
            want += double(xp[((g * cin_g + ic) * s.hw + iy) * s.hw + ix]) *
                    double(wp[((oc * cin_g + ic) * s.k + ky) * s.k + kx]);
          }
        }
      }
      chk.add(yp[e], want);
    }
    return chk.max_err();
  });
  r.compile_s = compile_s;
  r.kernels = cf.num_kernels();
  r.algorithm = explained_algorithms(cf);
  r.flops = s.flops();
  r.input_sum = input_sum({tx, tw});
  return r;
}

}  // namespace kiln::bench
