// The autotuning flags `kiln run`, `kiln explain` and `kiln dump` share
// (CompileOptions::autotune, autotune_budget_s, example_shapes).
#include <cmath>
#include <cstdlib>

#include "tools/driver.h"

namespace kiln::cli {

bool read_autotune_flag(ArgReader& r, CompileOptions* o) {
  if (r.flag("autotune")) {
    o->autotune = true;
  } else if (auto v = r.value({"autotune-budget"})) {
    char* end = nullptr;
    double s = std::strtod(v->c_str(), &end);
    KILN_USER_CHECK(!v->empty() && end == v->c_str() + v->size() && std::isfinite(s) && s > 0,
                    "--autotune-budget: expected a positive number of seconds, got '" << *v
                                                                                      << "'");
    o->autotune_budget_s = s;
    o->autotune = true;
  } else {
    return false;
  }
  return true;
}

std::string autotune_flags_help() {
  return "  --autotune           time each contraction's algorithm candidates on these\n"
         "                       input sizes and keep the fastest correct one (also\n"
         "                       KILN_AUTOTUNE=1); choices are cached in\n"
         "                       $KILN_CACHE_DIR/tuning (see docs/autotune.md)\n"
         "  --autotune-budget S  seconds of tuning per contraction (default 1; implies\n"
         "                       --autotune)\n";
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : tensors) shapes.push_back(t.sizes());
  return shapes;
}

}  // namespace kiln::cli
