// The public face of the contraction algorithms registered in the lowering
// table (see passes/algorithms.h); the algorithms themselves live with their
// op's lowering (lower_matmul.cpp, lower_conv.cpp) and, for the ones a target
// kind's generator offers, under passes/lower/cpu/ (gemm_candidates.cpp,
// conv_candidates.cpp).
#include "passes/algorithms.h"

#include "kiln/error.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes {

namespace {

const lower::OpLowering* find(const std::string& op) {
  const lower::LoweringTable& t = lower::lowering_table();
  auto it = t.find(op);
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace

bool has_algorithms(const std::string& op) {
  const lower::OpLowering* l = find(op);
  return l && !l->algorithms.empty();
}

AlgorithmChoice choose_algorithm(const ir::Node& n, const Target& t) {
  AlgorithmChoice c;
  const lower::OpLowering* l = find(n.op());
  if (!l || l->algorithms.empty()) return c;
  int best = -1;
  for (const lower::AlgorithmLowering& a : l->algorithms) {
    if (!a.serves(t.kind)) continue;
    AlgorithmCandidate cand;
    cand.name = a.name;
    std::string why;
    cand.applies = !a.applies || a.applies(n, t, &why);
    if (cand.applies) {
      cand.score = a.score ? a.score(n, t, &why) : 0;
      if (best < 0 || cand.score > c.candidates[size_t(best)].score) {
        best = int(c.candidates.size());
      }
    }
    cand.note = why;
    c.candidates.push_back(std::move(cand));
  }
  KILN_USER_CHECK(best >= 0, "lower: " << n.op() << ": no algorithm applies to this node on a "
                                       << target_kind_name(t.kind) << " target");
  const AlgorithmCandidate& w = c.candidates[size_t(best)];
  c.name = w.name;
  c.reason = "heuristic: " + (w.note.empty() ? std::string("highest score") : w.note);
  return c;
}

std::vector<std::string> applicable_algorithms(const ir::Node& n, const Target& t) {
  std::vector<std::string> out;
  for (const AlgorithmCandidate& c : choose_algorithm(n, t).candidates) {
    if (c.applies) out.push_back(c.name);
  }
  return out;
}

}  // namespace kiln::passes
