// Tests of the contraction ops (matmul, bmm, linear): inferred types for every
// torch.matmul rank case (symbolic dims included), reference values checked by
// hand and against a naive triple loop written here, error messages, and the
// conformance corpus's single-op matmul cases.
//
// Random operands hold small integers, so f32 products are exact and compare
// with ==; fractional data (f64, corpus) compares with a tolerance.
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "conformance_corpus.h"
#include "op_test_util.h"

namespace kiln::test {
namespace {

using ir::Dim;
using ir::Type;

// Deterministic small integers in [-4, 4].
std::vector<double> small_ints(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = double(int64_t((s >> 33) % 9) - 4);
  }
  return v;
}

// Row-major C[M, N] = A[M, K] * B[K, N], the plainest way.
std::vector<double> naive_mm(const std::vector<double>& A, const std::vector<double>& B, int64_t M,
                             int64_t K, int64_t N) {
  std::vector<double> C(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        C[size_t(i * N + j)] += A[size_t(i * K + k)] * B[size_t(k * N + j)];
  return C;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
  }
}

std::vector<Type> infer_types_of(const std::string& op, const std::vector<Type>& types,
                                 const ir::Attrs& attrs = {}) {
  const ir::OpDef& d = op_def(op);
  return ir::infer_types(d, types, ir::complete_attrs(d, attrs));
}

Type f32(ir::Dims dims) {
  return Type::tensor(DType::F32, std::move(dims));
}

// The message of the kiln::Error thrown by `f`, or "" when nothing is thrown.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// --- matmul rank cases, by hand ---------------------------------------------------

TEST(Matmul, VectorDotIsZeroDim) {
  Tensor out = run_op1("matmul", {make_tensor({3}, {1, 2, 3}), make_tensor({3}, {4, 5, 6})});
  EXPECT_EQ(out.dim(), 0);
  EXPECT_EQ(out.item(), 32.0);
}

TEST(Matmul, MatrixTimesVector) {
  Tensor m = make_tensor({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor out = run_op1("matmul", {m, make_tensor({2}, {1, -1})});
  EXPECT_EQ(out.sizes(), (Shape{3}));
  EXPECT_EQ(values_of(out), (std::vector<double>{-1, -1, -1}));
}

TEST(Matmul, VectorTimesMatrix) {
  Tensor m = make_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor out = run_op1("matmul", {make_tensor({2}, {1, 2}), m});
  EXPECT_EQ(out.sizes(), (Shape{3}));
  EXPECT_EQ(values_of(out), (std::vector<double>{9, 12, 15}));
}

TEST(Matmul, MatrixTimesMatrix) {
  Tensor a = make_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor out = run_op1("matmul", {a, b});
  EXPECT_EQ(out.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{58, 64, 139, 154}));
}

TEST(Matmul, BatchedTimesVector) {
  Tensor a = make_tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2});
  Tensor out = run_op1("matmul", {a, make_tensor({3}, {1, 0, 2})});
  EXPECT_EQ(out.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{7, 16, 1, 6}));
}

TEST(Matmul, VectorTimesBatched) {
  Tensor b = make_tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2});
  Tensor out = run_op1("matmul", {make_tensor({2}, {1, 2}), b});
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values_of(out), (std::vector<double>{9, 12, 15, 3, 4, 5}));
}

TEST(Matmul, MatrixTimesBatchedBroadcastsTheMatrix) {
  Tensor a = make_tensor({2, 3}, {1, 0, 0, 0, 1, 1});
  Tensor b = make_tensor({2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, 1});
  Tensor out = run_op1("matmul", {a, b});
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(values_of(out), (std::vector<double>{1, 2, 8, 10, 0, 1, 0, 2}));
}

// --- against the naive loop ---------------------------------------------------------

TEST(Matmul, MatchesNaiveLoopOverOddSizes) {
  const int64_t sizes[] = {1, 3, 7, 17, 33};
  uint64_t seed = 1;
  for (int64_t M : sizes) {
    for (int64_t N : sizes) {
      for (int64_t K : sizes) {
        std::vector<double> A = small_ints(M * K, seed++), B = small_ints(K * N, seed++);
        Tensor out = run_op1("matmul", {make_tensor({M, K}, A), make_tensor({K, N}, B)});
        ASSERT_EQ(out.sizes(), (Shape{M, N}));
        EXPECT_EQ(values_of(out), naive_mm(A, B, M, K, N)) << M << "x" << K << "x" << N;
      }
    }
  }
}

TEST(Matmul, BroadcastsBatchDims) {
  // [2, 1, 3, 4] @ [5, 4, 2] -> [2, 5, 3, 2]: a's batch i pairs with every b batch j.
  std::vector<double> A = small_ints(2 * 3 * 4, 11), B = small_ints(5 * 4 * 2, 12);
  Tensor out = run_op1("matmul", {make_tensor({2, 1, 3, 4}, A), make_tensor({5, 4, 2}, B)});
  ASSERT_EQ(out.sizes(), (Shape{2, 5, 3, 2}));
  std::vector<double> got = values_of(out), want;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      std::vector<double> a(A.begin() + i * 12, A.begin() + (i + 1) * 12);
      std::vector<double> b(B.begin() + j * 8, B.begin() + (j + 1) * 8);
      std::vector<double> c = naive_mm(a, b, 3, 4, 2);
      want.insert(want.end(), c.begin(), c.end());
    }
  }
  EXPECT_EQ(got, want);
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  Tensor out = run_op1("matmul", {Tensor::empty({3, 0}), Tensor::empty({0, 4})});
  EXPECT_EQ(out.sizes(), (Shape{3, 4}));
  EXPECT_EQ(values_of(out), std::vector<double>(12, 0.0));
  Tensor dot = run_op1("matmul", {Tensor::empty({0}), Tensor::empty({0})});
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item(), 0.0);
  // Empty M or batch: an empty result, nothing to compute.
  EXPECT_EQ(run_op1("matmul", {Tensor::empty({0, 3}), Tensor::empty({3, 2})}).sizes(),
            (Shape{0, 2}));
  EXPECT_EQ(run_op1("matmul", {Tensor::empty({0, 2, 3}), Tensor::empty({3})}).sizes(),
            (Shape{0, 2}));
}

TEST(Matmul, Float64KeepsPrecision) {
  std::vector<double> A{0.1, 1e-9, 1.0 / 3, 2.5, -7.25, 1e8};
  std::vector<double> B{3.0, -0.2, 1e-8, 0.7, 11.0, 1.0 / 7};
  Tensor out =
      run_op1("matmul", {make_tensor({2, 3}, A, DType::F64), make_tensor({3, 2}, B, DType::F64)});
  EXPECT_EQ(out.dtype(), DType::F64);
  expect_near_all(values_of(out), naive_mm(A, B, 2, 3, 2), 1e-15);
}

TEST(Matmul, Int32WrapsLikeInt32Arithmetic) {
  Tensor a = make_tensor({2, 2}, {1, -2, 3, 4}, DType::I32);
  Tensor b = make_tensor({2, 2}, {5, 6, -7, 8}, DType::I32);
  Tensor out = run_op1("matmul", {a, b});
  EXPECT_EQ(out.dtype(), DType::I32);
  EXPECT_EQ(values_of(out), (std::vector<double>{19, -10, -13, 50}));
  // 65536 * 65536 = 2^32 wraps to 0 in 32 bits; + 3 * 5.
  Tensor big = run_op1("matmul", {make_tensor({2}, {65536, 3}, DType::I32),
                                  make_tensor({2}, {65536, 5}, DType::I32)});
  EXPECT_EQ(big.item(), 15.0);
}

TEST(Matmul, HalfAndBFloat16) {
  for (DType dt : {DType::F16, DType::BF16}) {
    Tensor out =
        run_op1("matmul", {make_tensor({1, 2}, {0.5, 2}, dt), make_tensor({2, 1}, {4, 0.25}, dt)});
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_EQ(values_of(out), (std::vector<double>{2.5}));
  }
}

TEST(Matmul, TransposedOperands) {
  // a is [3, 5] stored as [5, 3] transposed, b is [5, 4] stored as [4, 5] transposed.
  std::vector<double> At = small_ints(15, 21), Bt = small_ints(20, 22);
  Tensor a = make_tensor({5, 3}, At).view_as_strided({3, 5}, {1, 3}, 0);
  Tensor b = make_tensor({4, 5}, Bt).view_as_strided({5, 4}, {1, 5}, 0);
  std::vector<double> A(15), B(20);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) A[size_t(i * 5 + k)] = At[size_t(k * 3 + i)];
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 4; ++j) B[size_t(k * 4 + j)] = Bt[size_t(j * 5 + k)];
  Tensor out = run_op1("matmul", {a, b});
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_EQ(values_of(out), naive_mm(A, B, 3, 5, 4));
  // A strided vector (every other element).
  Tensor v = make_tensor({10}, {1, 9, 2, 9, 3, 9, 4, 9, 5, 9}).view_as_strided({5}, {2}, 0);
  Tensor mv = run_op1("matmul", {a, v});
  std::vector<double> want = naive_mm(A, {1, 2, 3, 4, 5}, 3, 5, 1);
  EXPECT_EQ(values_of(mv), want);
}

// --- inference, symbolic dims ---------------------------------------------------------

TEST(Matmul, InferPassesSymbolicDimsThrough) {
  Dim n = Dim::sym("N");
  EXPECT_EQ(infer_types_of("matmul", {f32({n, 784}), f32({784, 256})})[0], f32({n, 256}));
  EXPECT_EQ(infer_types_of("matmul", {f32({n, 1, 3, 4}), f32({5, 4, 2})})[0], f32({n, 5, 3, 2}));
  EXPECT_EQ(infer_types_of("matmul", {f32({n, 3, 4}), f32({n, 4, 2})})[0], f32({n, 3, 2}));
  EXPECT_EQ(infer_types_of("matmul", {f32({n, 3, 4}), f32({4})})[0], f32({n, 3}));
  EXPECT_EQ(infer_types_of("matmul", {f32({4}), f32({n, 4, 7})})[0], f32({n, 7}));
  // A shared symbolic K is provably equal.
  Dim k = Dim::sym("K");
  EXPECT_EQ(infer_types_of("matmul", {f32({2, k}), f32({k, 3})})[0], f32({2, 3}));
  EXPECT_EQ(infer_types_of("bmm", {f32({n, 2, 3}), f32({n, 3, 4})})[0], f32({n, 2, 4}));
  EXPECT_EQ(infer_types_of("linear", {f32({n, 7, 4}), f32({5, 4}), f32({5})})[0], f32({n, 7, 5}));
}

TEST(Matmul, Errors) {
  auto mm = [](Shape a, Shape b, DType da = DType::F32, DType db = DType::F32) {
    return error_of([&] { run_op1("matmul", {Tensor::zeros(a, da), Tensor::zeros(b, db)}); });
  };
  EXPECT_EQ(mm({2, 3}, {4, 5}),
            "matmul: inner dims differ: a is f32[2, 3], b is f32[4, 5] (3 vs 4)");
  EXPECT_EQ(mm({3}, {4}), "matmul: inner dims differ: a is f32[3], b is f32[4] (3 vs 4)");
  EXPECT_EQ(mm({2, 3}, {2, 3}, DType::F32, DType::F64),
            "matmul: operand dtypes differ (f32 vs f64): a is f32[2, 3], b is f64[2, 3]");
  EXPECT_EQ(mm({}, {3}), "matmul: both operands must be at least 1-D: a is f32[], b is f32[3]");
  EXPECT_EQ(mm({2, 2, 3}, {3, 3, 4}),
            "matmul: batch dims do not broadcast: a is f32[2, 2, 3], b is f32[3, 3, 4] ([2] vs "
            "[3])");
  EXPECT_EQ(mm({2}, {2}, DType::Bool, DType::Bool),
            "matmul: operand 'a' must be a floating or integer tensor, got a is bool[2], b is "
            "bool[2]");
  EXPECT_EQ(error_of([] {
              infer_types_of("matmul", {f32({2, Dim::sym("K")}), f32({3, 4})});
            }),
            "matmul: inner dims differ: a is f32[2, K], b is f32[3, 4] (K vs 3)");
  EXPECT_EQ(error_of([] {
              infer_types_of("matmul", {f32({2, 3}), Type::int_()});
            }),
            "matmul: operand 'b' must be Tensor, got int");
}

// --- bmm -----------------------------------------------------------------------------

TEST(Bmm, MatchesNaiveLoopPerBatch) {
  std::vector<double> A = small_ints(3 * 7 * 16, 31), B = small_ints(3 * 16 * 5, 32);
  Tensor out = run_op1("bmm", {make_tensor({3, 7, 16}, A), make_tensor({3, 16, 5}, B)});
  ASSERT_EQ(out.sizes(), (Shape{3, 7, 5}));
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<double> c =
        naive_mm(std::vector<double>(A.begin() + i * 112, A.begin() + (i + 1) * 112),
                 std::vector<double>(B.begin() + i * 80, B.begin() + (i + 1) * 80), 7, 16, 5);
    want.insert(want.end(), c.begin(), c.end());
  }
  EXPECT_EQ(values_of(out), want);
}

TEST(Bmm, Errors) {
  auto bmm = [](Shape a, Shape b) {
    return error_of([&] { run_op1("bmm", {Tensor::zeros(a), Tensor::zeros(b)}); });
  };
  EXPECT_EQ(bmm({2, 3}, {3, 4}), "bmm: both operands must be 3-D: a is f32[2, 3], b is f32[3, 4]");
  EXPECT_EQ(bmm({2, 2, 3}, {3, 3, 4}),
            "bmm: batch dims differ: a is f32[2, 2, 3], b is f32[3, 3, 4] (2 vs 3)");
  EXPECT_EQ(bmm({2, 2, 3}, {1, 3, 4}),
            "bmm: batch dims differ: a is f32[2, 2, 3], b is f32[1, 3, 4] (2 vs 1)");
  EXPECT_EQ(bmm({2, 2, 3}, {2, 4, 4}),
            "bmm: inner dims differ: a is f32[2, 2, 3], b is f32[2, 4, 4] (3 vs 4)");
}

// --- linear ----------------------------------------------------------------------------

TEST(Linear, HandCase) {
  Tensor x = make_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = make_tensor({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  Tensor b = make_tensor({2}, {10, 20});
  EXPECT_EQ(values_of(run_op1("linear", {x, w, b})), (std::vector<double>{8, 23, 8, 27.5}));
  EXPECT_EQ(values_of(run_op1("linear", {x, w, Arg::none()})),
            (std::vector<double>{-2, 3, -2, 7.5}));
  // A 1-D input is one row; a 1-D weight drops the output feature dim.
  Tensor v = run_op1("linear", {make_tensor({3}, {1, 2, 3}), w, b});
  EXPECT_EQ(v.sizes(), (Shape{2}));
  EXPECT_EQ(values_of(v), (std::vector<double>{8, 23}));
  Tensor s = run_op1("linear", {x, make_tensor({3}, {1, 1, 1}), Arg::none()});
  EXPECT_EQ(s.sizes(), (Shape{2}));
  EXPECT_EQ(values_of(s), (std::vector<double>{6, 15}));
}

TEST(Linear, ThreeDimInputMatchesNaiveLoop) {
  const int64_t B = 2, T = 5, In = 7, Out = 3;
  std::vector<double> X = small_ints(B * T * In, 41), W = small_ints(Out * In, 42);
  std::vector<double> bias = small_ints(Out, 43);
  Tensor out = run_op1(
      "linear", {make_tensor({B, T, In}, X), make_tensor({Out, In}, W), make_tensor({Out}, bias)});
  ASSERT_EQ(out.sizes(), (Shape{B, T, Out}));
  std::vector<double> want;
  for (int64_t r = 0; r < B * T; ++r) {
    for (int64_t o = 0; o < Out; ++o) {
      double acc = bias[size_t(o)];
      for (int64_t i = 0; i < In; ++i) acc += X[size_t(r * In + i)] * W[size_t(o * In + i)];
      want.push_back(acc);
    }
  }
  EXPECT_EQ(values_of(out), want);
}

TEST(Linear, IntegerAndBroadcastBias) {
  Tensor x = make_tensor({2, 2}, {1, 2, 3, 4}, DType::I64);
  Tensor w = make_tensor({2, 2}, {1, 1, 1, -1}, DType::I64);
  // A [1] bias broadcasts over the output like torch's addmm.
  Tensor out = run_op1("linear", {x, w, make_tensor({1}, {100}, DType::I64)});
  EXPECT_EQ(out.dtype(), DType::I64);
  EXPECT_EQ(values_of(out), (std::vector<double>{103, 99, 107, 99}));
}

TEST(Linear, Errors) {
  auto lin = [](Shape x, Shape w, Shape b) {
    return error_of([&] {
      run_op1("linear", {Tensor::zeros(x), Tensor::zeros(w),
                         b.empty() ? Arg::none() : Arg(Tensor::zeros(b))});
    });
  };
  EXPECT_EQ(lin({2, 3}, {4, 5}, {}),
            "linear: in_features differ: x is f32[2, 3], weight is f32[4, 5] (3 vs 5)");
  EXPECT_EQ(lin({2, 3}, {4, 3}, {3}),
            "linear: bias does not broadcast to the output [2, 4]: x is f32[2, 3], weight is "
            "f32[4, 3], bias is f32[3]");
  EXPECT_EQ(lin({2, 3}, {1, 4, 3}, {}),
            "linear: weight must be 2-D [out_features, in_features] (or 1-D): x is f32[2, 3], "
            "weight is f32[1, 4, 3]");
  EXPECT_EQ(
      error_of([] {
        run_op1("linear", {Tensor::zeros({2, 3}), Tensor::zeros({4, 3}, DType::F64), Arg::none()});
      }),
      "linear: operand dtypes differ (f32 vs f64): x is f32[2, 3], weight is f64[4, 3]");
}

// --- the conformance corpus's single-op cases ----------------------------------------

std::filesystem::path corpus_dir() { return conformance_dir() / "cases"; }

// Reads input/output npy files of corpus case `id` (a test first skips when there is no corpus).
Tensor corpus(const std::string& id, const std::string& file) {
  return read_npy((corpus_dir() / id / (file + ".npy")).string());
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> g = values_of(got), w = values_of(want);
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - w[i]), atol + rtol * std::abs(w[i])) << "element " << i;
  }
}

TEST(MatmulCorpus, SingleOpCases) {
  KILN_SKIP_WITHOUT_CORPUS();
  const double rt = 1e-3, at = 1e-4;  // the corpus's f32_accumulate class
  {
    std::string id = "mm_vector_ranks";
    Tensor a = corpus(id, "input_a"), b = corpus(id, "input_b"), m = corpus(id, "input_m"),
           u = corpus(id, "input_u");
    expect_close(run_op1("matmul", {a, b}), corpus(id, "output_0"), rt, at);
    expect_close(run_op1("matmul", {m, a}), corpus(id, "output_1"), rt, at);
    expect_close(run_op1("matmul", {u, m}), corpus(id, "output_2"), rt, at);
  }
  {
    std::string id = "mm_2d_shapes";
    expect_close(run_op1("matmul", {corpus(id, "input_a"), corpus(id, "input_b")}),
                 corpus(id, "output_0"), rt, at);
    expect_close(run_op1("matmul", {corpus(id, "input_r"), corpus(id, "input_c")}),
                 corpus(id, "output_1"), rt, at);
    expect_close(run_op1("matmul", {corpus(id, "input_p"), corpus(id, "input_q")}),
                 corpus(id, "output_2"), rt, at);
  }
  {
    std::string id = "mm_batched_broadcast";
    expect_close(run_op1("matmul", {corpus(id, "input_a"), corpus(id, "input_b")}),
                 corpus(id, "output_0"), rt, at);
  }
  {
    std::string id = "mm_batched_with_vector";
    Tensor a = corpus(id, "input_a");
    expect_close(run_op1("matmul", {a, corpus(id, "input_v")}), corpus(id, "output_0"), rt, at);
    expect_close(run_op1("matmul", {corpus(id, "input_u"), a}), corpus(id, "output_1"), rt, at);
    expect_close(run_op1("matmul", {corpus(id, "input_m"), a}), corpus(id, "output_2"), rt, at);
  }
  {
    std::string id = "mm_bmm_chain";
    Tensor ab = run_op1("bmm", {corpus(id, "input_a"), corpus(id, "input_b")});
    expect_close(run_op1("bmm", {ab, corpus(id, "input_c")}), corpus(id, "output_0"), rt, at);
  }
  {
    std::string id = "mm_linear_forms";
    Tensor x = corpus(id, "input_x"), w = corpus(id, "input_w");
    expect_close(run_op1("linear", {x, w, corpus(id, "input_b")}), corpus(id, "output_0"), rt, at);
    expect_close(run_op1("linear", {x, w, Arg::none()}), corpus(id, "output_1"), rt, at);
  }
}

TEST(Matmul, RegistryEntries) {
  for (const char* name : {"matmul", "bmm", "linear"}) {
    EXPECT_EQ(op_def(name).category, ir::OpCategory::Contraction) << name;
    EXPECT_FALSE(op_def(name).doc.empty()) << name;
  }
  EXPECT_EQ(op_def("linear").signature(),
            "linear(x: Tensor, weight: Tensor, bias: Tensor?) -> contraction");
}

}  // namespace
}  // namespace kiln::test
