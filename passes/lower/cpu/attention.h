// The CPU's fused attention kernel ("attention.flash"): softmax(q kt * scale
// + mask) v in one pass over the keys per block of queries, with an online
// softmax (a running max and sum per query row), so the T x S scores never
// reach memory. The fusion pass recognizes the pattern
// (passes/attention_pattern.h); lower_graph.cpp builds the spec from the
// group's operands (read in place through their index functions: the
// transposed head views of a QKV projection are not copied).
//
// The nest (f32 on AVX-512: MR = 4 query rows, NS = 32 keys a sub-block,
// KC = 256 keys a chunk):
//   for (task over batch x blocks of QC query rows) parallel {   // QC: 64, or 128 / 256
//                                         // while every core still gets 4 tasks
//     allocate kt_p[D * SP] in heap           // the task's keys, [d][j]: vector loads along j
//     for (micro-rows of MR queries) {
//       O[MR, Dv] = 0, m[MR] = -inf, l[MR] = 0                  // registers / stack
//       for (key chunks c0 of KC; causal: only up to the diagonal) {
//         for (sub-blocks j0 of NS in the chunk) {
//           s[MR, NS] = q[i, :] . kt_p[:, j0 + j]               // register tile
//           p[i, j0 - c0 + j] = score(s) (scale, mask: the fused elementwise ops);
//                               -inf past S or the diagonal (only the sub-block
//                               crossing them compares indices)
//         }
//         per row, lane-wise over the chunk then across lanes:
//                  m' = max(m, max_j p); a = exp(m - m'); p = exp(p - m');
//                  l = l * a + sum_j p; O[i, :] *= a; m = m'
//         O += p[:, 0 .. cn] v[c0 .. c0 + cn, :]                // register tile
//       }
//       out[i, e] = O[i, e] * (1 / l[i])    (through the store: epilogues apply)
//     }
//   }
// T, S <= KC (one chunk) takes each row's max and sum once, never rescaling.
// A row whose every score is -inf gives 0 * (1 / 0) = NaN, as the unfused softmax;
// the max used for exp is clamped to the lowest finite value so that blocks
// (or chunks) fully masked for a row before its first kept key add exactly 0.
#pragma once

#include <functional>
#include <vector>

#include "passes/lower/lower_internal.h"
#include "passes/target.h"

namespace kiln::passes::lower {

struct AttentionSpec {
  std::vector<Expr> batch;  // the output's batch dims
  Expr T, S, D;             // queries, keys, the q.k contraction
  int64_t Dv = 0;           // the values' dim (static)
  DType acc = DType::F32;   // f32 or f64: every value of the pattern
  bool causal = false;      // keys past the query's own index are -inf: skip their blocks,
                            // and set the rest of the diagonal block by comparing indices
                            // (`score` then excludes the causal fill itself)
  std::function<Expr(const Index& b, const Expr& i, const Expr& d)> q;
  std::function<Expr(const Index& b, const Expr& d, const Expr& j)> kt;
  std::function<Expr(const Index& b, const Expr& j, const Expr& e)> v;
  // The score of (i, j) after the fused elementwise ops, an expression of
  // `score_var` (bound to q_i . k_j, dtype acc) and operand loads.
  Expr score_var;
  std::function<Expr(const Index& b, const Expr& i, const Expr& j)> score;
  std::function<Stmt(const Index& b, const Expr& i, const Expr& e, const Expr& value)> store;
};

Stmt generate_attention(LowerContext& ctx, const AttentionSpec& spec, const CpuTarget& target);

}  // namespace kiln::passes::lower

namespace kiln::passes::lower {

// The root lowering of an attention group's matmul(p, v): the spec built from
// the operands the group lowering gathered (q and kt: the scores matmul's
// operands; v: the values; `score`: the fused elementwise ops' value at a
// scores index, an expression of `score_var`; `score_dims`: the scores' dims).
RootFn attention_root(const Operand& q, const Operand& kt, const Operand& v, const Expr& score_var,
                      const Operand& score, const std::vector<Expr>& score_dims, int64_t dv,
                      bool causal);

}  // namespace kiln::passes::lower
