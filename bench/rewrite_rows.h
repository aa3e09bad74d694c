// Kiln against Kiln (issue 14, acceptance 3): two ways of writing the same
// computation in a script must cost about the same once Kiln's rewrites have
// run. Each pair is lowered from Python source with kiln::Script, compiled,
// checked against one double-precision reference on the same inputs
// (bench_data.h), then timed with the two functions' calls alternating, so
// both meet the same neighbours on a shared machine.
//   mm_t:  torch.mm(x, w.t()) vs F.linear(x, w), x 8x1024, w 4096x1024, one
//          thread (CompileOptions::num_threads = 1, as the issue measured it);
//   pow2:  x.pow(2) vs x * x over 2^24 f32, the pool's threads.
// (--smoke: x 4x64, w 96x64; 2^16 elements.)
#pragma once

#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/kiln_rows.h"

namespace kiln::bench {

struct RewritePair {
  std::string key;         // "mm_t", "pow2"
  std::string form, peer;  // the rewritten form, the form it must match
  std::string shapes;      // "x 8x1024, w 4096x1024"
  int threads = 0;         // CompileOptions::num_threads (0: the pool's)
  RowResult form_row, peer_row;
};

std::vector<std::string> rewrite_pair_names();
RewritePair run_rewrite_pair(const std::string& key, bool smoke, const Budget& budget);

}  // namespace kiln::bench
