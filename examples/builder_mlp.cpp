// Builds a one-layer MLP with the C++ builder API, prints its graph IR, runs it
// on random inputs with the reference interpreter and prints a short summary.
//
//   build/examples/builder_mlp [BATCH]      (BATCH defaults to 4)
//
// The batch dim is symbolic (`N`), so the same Function runs any batch size.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "kiln/kiln.h"

int main(int argc, char** argv) {
  try {
    int64_t batch = argc > 1 ? std::atoll(argv[1]) : 4;
    if (batch < 0) throw kiln::Error("BATCH must be >= 0");

    kiln::Builder b("mlp");
    kiln::Var x = b.input("x", kiln::DType::F32, {kiln::sym("N"), 784});
    kiln::Var w = b.input("w", kiln::DType::F32, {784, 256});
    kiln::Var bias = b.input("b", kiln::DType::F32, {256});
    kiln::Var y = kiln::relu(kiln::matmul(x, w) + bias);
    kiln::Function f = b.build({y});

    std::cout << f.str() << "\n";

    kiln::Tensor xt = kiln::Tensor::randn({batch, 784}, /*seed=*/1);
    kiln::Tensor wt = kiln::Tensor::randn({784, 256}, /*seed=*/2);
    kiln::Tensor bt = kiln::Tensor::randn({256}, /*seed=*/3);
    std::vector<kiln::Tensor> out = f.run_interpreter({xt, wt, bt});

    const kiln::Tensor& t = out.at(0);
    // relu output: count the zeros to show it did something.
    int64_t zeros = 0;
    double total = 0;
    kiln::Tensor d = t.to(kiln::DType::F64).contiguous();
    for (int64_t i = 0; i < d.numel(); ++i) {
      double v = d.data<double>()[i];
      zeros += v == 0;
      total += v;
    }
    std::printf("output: %s%s, %lld of %lld elements zero, mean %.4f\n",
                kiln::dtype_name(t.dtype()), kiln::shape_str(t.sizes()).c_str(),
                static_cast<long long>(zeros), static_cast<long long>(d.numel()),
                d.numel() ? total / static_cast<double>(d.numel()) : 0.0);
    return 0;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
