// Fused attention on the CPU (passes/attention_pattern.h,
// passes/lower/cpu/attention.h): the written-out pattern and
// F.scaled_dot_product_attention become one "attention.flash" kernel whose
// values match the interpreter's (the unfused composition) across dtypes,
// lengths, head dims, heads, causal and explicit masks (bool, additive,
// broadcast over the batch, rows masked entirely), and patterns that only
// look like attention stay unfused and say why.
#include <gtest/gtest.h>

#include <limits>

#include "kiln/compile.h"
#include "kiln/script.h"
#include "lower_test_util.h"

namespace kiln::test {
namespace {

const char* kScript = R"(
def written(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    s = (q @ k.transpose(-2, -1)) / (float(q.size(-1)) ** 0.5)
    return torch.softmax(s, dim=-1) @ v

def written_causal(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    t = q.size(-2)
    s = (q @ k.transpose(-2, -1)) / (float(q.size(-1)) ** 0.5)
    future = torch.arange(t).unsqueeze(0) > torch.arange(t).unsqueeze(1)
    s = s.masked_fill(future, float('-inf'))
    return torch.softmax(s, dim=-1) @ v

def sdpa(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v)

def sdpa_causal(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)

def sdpa_scale(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v, scale=0.3)

def sdpa_mask(q: Tensor, k: Tensor, v: Tensor, m: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

def heads(x: Tensor, w: Tensor, n: int) -> Tensor:
    b, t, c = x.shape
    d = c // n
    q, k, v = F.linear(x, w).split(c, dim=-1)
    q = q.reshape(b, t, n, d).transpose(1, 2)
    k = k.reshape(b, t, n, d).transpose(1, 2)
    v = v.reshape(b, t, n, d).transpose(1, 2)
    s = (q @ k.transpose(-2, -1)) / (float(d) ** 0.5)
    future = torch.arange(t).unsqueeze(0) > torch.arange(t).unsqueeze(1)
    s = s.masked_fill(future, float('-inf'))
    y = torch.softmax(s, dim=-1) @ v
    return y.transpose(1, 2).reshape(b, t, c) * 2.0 + 1.0

def nanogpt(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    t = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / (float(k.size(-1)) ** 0.5))
    bias = torch.tril(torch.ones(t, t)).view(1, 1, t, t)
    att = att.masked_fill(bias[:, :, :t, :t] == 0, float('-inf'))
    return torch.softmax(att, dim=-1) @ v

def wrong_dim(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    s = q @ k.transpose(-2, -1)
    return torch.softmax(s, dim=-2) @ v

def scores_read_twice(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    s = q @ k.transpose(-2, -1)
    return torch.softmax(s, dim=-1) @ v + s.sum(-1, keepdim=True)
)";

struct Case {
  std::string fn;
  std::vector<Tensor> inputs;
};

std::vector<Binding> bindings_of(const std::vector<Tensor>& in, const std::vector<std::string>& names) {
  std::vector<Binding> b;
  for (size_t i = 0; i < in.size(); ++i) b.push_back(bind_like(names[i], in[i]));
  return b;
}

// Compiles `fn` for the inputs on llvm (cpu) and the interpreter; checks the
// values agree and returns the llvm function's explain text.
std::string check(const std::string& fn, const std::vector<Tensor>& in,
                  const std::vector<std::string>& names, std::vector<Binding> extra = {},
                  int threads = 0) {
  std::vector<Binding> b = bindings_of(in, names);
  b.insert(b.end(), extra.begin(), extra.end());
  Function f = load_script(kScript, fn, b);
  CompileOptions ref_o;
  ref_o.backend = "interp";
  CompiledFunction ref = compile(f, ref_o);
  CompileOptions o;
  o.backend = "llvm";
  o.num_threads = threads;
  CompiledFunction got_f = compile(f, o);
  std::vector<Tensor> want = ref(in), got = got_f(in);
  const bool f64 = in[0].dtype() == DType::F64;
  const double tol = f64 ? 1e-10 : 2e-5;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_TRUE(tensors_close(got[i], want[i], tol, tol)) << fn << "\n" << got_f.explain();
  }
  return got_f.explain();
}

const std::vector<std::string> kQKV = {"q", "k", "v"};

uint64_t seed = 1;
Tensor randn(const Shape& s, DType t) { return Tensor::randn(s, seed++, t); }

bool fused(const std::string& explain) {
  return explain.find("attention fused") != std::string::npos &&
         explain.find("algorithm: attention.flash") != std::string::npos;
}

TEST(Attention, WrittenOutCausalAcrossShapes) {
  for (DType t : {DType::F32, DType::F64}) {
    for (int64_t T : {1, 7, 64, 129}) {
      for (int64_t D : {8, 64}) {
        for (int64_t H : {1, 4}) {
          if (t == DType::F64 && (D == 8 || H == 1) && T != 7) continue;  // fewer f64 compiles
          SCOPED_TRACE(std::string(dtype_name(t)) + " T=" + std::to_string(T) +
                       " D=" + std::to_string(D) + " H=" + std::to_string(H));
          std::vector<Tensor> in = {randn({2, H, T, D}, t), randn({2, H, T, D}, t),
                                    randn({2, H, T, D}, t)};
          std::string e = check("written_causal", in, kQKV);
          EXPECT_TRUE(fused(e)) << e;
          EXPECT_NE(e.find("causal mask: key blocks above the diagonal skipped"),
                    std::string::npos)
              << e;
        }
      }
    }
  }
}

TEST(Attention, NotCausalAndSdpa) {
  for (DType t : {DType::F32, DType::F64}) {
    for (int64_t T : {1, 7, 129}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " T=" + std::to_string(T));
      std::vector<Tensor> in = {randn({3, T, 64}, t), randn({3, T, 64}, t), randn({3, T, 64}, t)};
      for (const char* fn : {"written", "sdpa", "sdpa_causal", "sdpa_scale"}) {
        std::string e = check(fn, in, kQKV);
        EXPECT_TRUE(fused(e)) << fn << "\n" << e;
      }
    }
  }
}

TEST(Attention, QueriesAndKeysOfDifferentLengths) {
  // Causal attention with fewer queries than keys keeps j <= i (top-left), as
  // torch does for is_causal.
  for (auto [T, S] : {std::pair<int64_t, int64_t>{7, 129}, {129, 7}, {1, 33}}) {
    SCOPED_TRACE("T=" + std::to_string(T) + " S=" + std::to_string(S));
    std::vector<Tensor> in = {randn({2, 4, T, 8}, DType::F32), randn({2, 4, S, 8}, DType::F32),
                              randn({2, 4, S, 24}, DType::F32)};
    EXPECT_TRUE(fused(check("sdpa", in, kQKV)));
    EXPECT_TRUE(fused(check("sdpa_causal", in, kQKV)));
  }
}

// Keys past one chunk of the kernel (256 keys: the softmax's max and sum are
// taken per chunk, and a later chunk with a larger max rescales the earlier
// ones): causal and not, queries fewer and more than the keys, odd head and
// value dims, on 1 and 2 threads.
TEST(Attention, KeysSpanningSeveralChunks) {
  for (int threads : {1, 2}) {
    for (auto [T, S] : {std::pair<int64_t, int64_t>{300, 300}, {7, 600}, {600, 257}, {513, 513}}) {
      for (auto [D, Dv] : {std::pair<int64_t, int64_t>{64, 64}, {13, 24}}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " T=" + std::to_string(T) +
                     " S=" + std::to_string(S) + " D=" + std::to_string(D) +
                     " Dv=" + std::to_string(Dv));
        std::vector<Tensor> in = {randn({1, 2, T, D}, DType::F32),
                                  randn({1, 2, S, D}, DType::F32),
                                  randn({1, 2, S, Dv}, DType::F32)};
        // Later keys score higher (a max that grows chunk by chunk), so the
        // rescale of the earlier chunks matters.
        for (int64_t j = 0; j < S; ++j) {
          for (int64_t d = 0; d < D; ++d) {
            std::vector<int64_t> idx{0, 1, j, d};
            in[1].set(idx, in[1].get(idx) * 0.2 + double(j) / double(S));
          }
        }
        for (const char* fn : {"sdpa", "sdpa_causal"}) {
          EXPECT_TRUE(fused(check(fn, in, kQKV, {}, threads))) << fn;
        }
      }
    }
  }
  std::vector<Tensor> in = {randn({2, 1, 300, 16}, DType::F64), randn({2, 1, 300, 16}, DType::F64),
                            randn({2, 1, 300, 16}, DType::F64)};
  EXPECT_TRUE(fused(check("written_causal", in, kQKV, {}, 2)));
}

// nanoGPT's mask, `tril(ones(t, t)) == 0`, is causal: the kernel compares
// indices instead of evaluating it. Values' dims that fill whole vectors (64)
// and that do not (24, 7), batch 1.
TEST(Attention, NanoGptTrilMaskAndValueDims) {
  for (int64_t T : {1, 7, 129}) {
    for (int64_t Dv : {7, 24, 64}) {
      SCOPED_TRACE("T=" + std::to_string(T) + " Dv=" + std::to_string(Dv));
      std::vector<Tensor> in = {randn({1, 3, T, 64}, DType::F32), randn({1, 3, T, 64}, DType::F32),
                                randn({1, 3, T, Dv}, DType::F32)};
      std::string e = check("nanogpt", in, kQKV);
      EXPECT_TRUE(fused(e)) << e;
      EXPECT_NE(e.find("causal mask: key blocks above the diagonal skipped"), std::string::npos)
          << e;
      EXPECT_TRUE(fused(check("written", in, kQKV)));
    }
  }
}

// A bool mask (true: attend) with some rows masked entirely: NaN rows, as the
// unfused softmax gives; the mask is broadcast over batch and heads.
TEST(Attention, BoolAndAdditiveMasks) {
  for (int64_t T : {7, 64, 129}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    Tensor m = Tensor::empty({T, T}, DType::Bool);
    Tensor add = Tensor::empty({1, T, T}, DType::F32);
    uint64_t state = 12345;
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t j = 0; j < T; ++j) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bool keep = (state >> 33) % 3 != 0 && i != 3;  // row 3 masked entirely
        std::vector<int64_t> idx{i, j};
        m.set(idx, keep ? 1 : 0);
        std::vector<int64_t> aidx{0, i, j};
        add.set(aidx, keep ? double((state >> 40) % 7) * 0.25 - 0.5
                           : -std::numeric_limits<double>::infinity());
      }
    }
    std::vector<Tensor> in = {randn({2, 4, T, 64}, DType::F32), randn({2, 4, T, 64}, DType::F32),
                              randn({2, 4, T, 64}, DType::F32), m};
    EXPECT_TRUE(fused(check("sdpa_mask", in, {"q", "k", "v", "m"})));
    in[3] = add;
    EXPECT_TRUE(fused(check("sdpa_mask", in, {"q", "k", "v", "m"})));
  }
}

// Q, K and V read in place as the head views of one projection, with an
// epilogue on the output.
TEST(Attention, HeadViewsOfAProjection) {
  for (int64_t T : {7, 128}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    // Weights scaled so the scores stay moderate (a sharp softmax magnifies
    // the projection's rounding beyond the tolerance).
    Tensor w = randn({192, 64}, DType::F32);
    for (int64_t i = 0; i < 192; ++i) {
      for (int64_t j = 0; j < 64; ++j) {
        std::vector<int64_t> idx{i, j};
        w.set(idx, w.get(idx) * 0.125);
      }
    }
    std::vector<Tensor> in = {randn({2, T, 64}, DType::F32), w};
    std::string e = check("heads", in, {"x", "w"}, {bind_value("n", Attr(int64_t(4)))});
    EXPECT_TRUE(fused(e)) << e;
  }
}

TEST(Attention, NearMissesStayUnfused) {
  std::vector<Tensor> in = {randn({2, 7, 8}, DType::F32), randn({2, 7, 8}, DType::F32),
                            randn({2, 7, 8}, DType::F32)};
  std::string e = check("wrong_dim", in, kQKV);
  EXPECT_FALSE(fused(e)) << e;
  EXPECT_NE(e.find("not fused as attention: softmax over dim"), std::string::npos) << e;
  e = check("scores_read_twice", in, kQKV);
  EXPECT_FALSE(fused(e)) << e;
  EXPECT_NE(e.find("not fused as attention: the scores are read elsewhere"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln::test
