// Recognition of scaled dot-product attention in the graph: the pattern
//   s = matmul(q, kt)                       (kt: keys transposed, [..., D, S])
//   s = e_n(...e_1(s))                      (elementwise: scale, mask fill, mask add)
//   p = softmax(s, dim=-1)
//   o = matmul(p, v)
// as scripts write it out and as the frontend expands
// F.scaled_dot_product_attention. The fusion pass makes it one kernel on CPU
// targets (docs/fusion.md) and the lowering runs it as "attention.flash"
// (passes/lower/cpu/attention.h): the T x S scores never reach memory.
//
// Assumes: a verified graph. Guarantees: a match names nodes of the graph whose
// intermediate values (scores, the elementwise chain, the probabilities) each
// have exactly one reader, the next node of the pattern, and are not graph
// outputs; every value of the pattern has the same floating dtype (f32 or
// f64); v's last dim is a static size.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

struct AttentionMatch {
  const ir::Node* qk = nullptr;               // matmul(q, kt)
  std::vector<const ir::Node*> chain;         // elementwise nodes between, graph order
  const ir::Node* softmax = nullptr;          // softmax over the last dim
  const ir::Node* pv = nullptr;               // matmul(p, v)
  bool causal = false;                        // a -inf mask keeping exactly j <= i
};

// The pattern ending at `pv`, or nullopt. `why_not` (when given) is set when
// `pv` is a matmul reading a softmax (it looks like attention) but the
// pattern does not match, to a phrase saying why; it stays empty otherwise.
std::optional<AttentionMatch> match_attention(const ir::Graph& g, const ir::Node& pv,
                                              std::string* why_not = nullptr);

// The largest static size of v's last dim the fused kernel takes (its
// accumulators are registers).
constexpr int64_t kMaxAttentionValueDim = 512;

}  // namespace kiln::passes
