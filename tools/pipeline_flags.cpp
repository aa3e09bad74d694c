// The graph-pipeline flags `kiln run` and `kiln dump` share: which passes'
// output to print and whether to time them (kiln::OptimizeOptions).
#include <algorithm>

#include "tools/driver.h"

namespace kiln::cli {

bool read_pipeline_flag(ArgReader& r, OptimizeOptions* o) {
  if (r.flag("print-after-all")) {
    o->print_after_all = true;
  } else if (r.flag("time-passes")) {
    o->time_passes = true;
  } else if (auto v = r.value({"print-after"})) {
    std::vector<std::string> names = graph_pass_names();
    if (std::find(names.begin(), names.end(), *v) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      KILN_USER_ERROR("--print-after: unknown pass '" << *v << "'; passes: " << known);
    }
    o->print_after = *v;
  } else {
    return false;
  }
  return true;
}

bool any_pipeline_flag(const OptimizeOptions& o) {
  return o.print_after_all || o.time_passes || !o.print_after.empty();
}

std::string pipeline_flags_help(const std::string& where) {
  std::string passes;
  for (const std::string& n : graph_pass_names()) passes += (passes.empty() ? "" : ", ") + n;
  return "  --print-after-all    print the graph after each graph pass; a pass that\n"
         "                       changed nothing prints '// (unchanged)'\n"
         "  --print-after PASS   print the graph after one pass, changed or not; PASS:\n"
         "                       " +
         passes +
         "\n"
         "  --time-passes        after the passes, a table of each one's time in ms\n"
         "                       " +
         where + "\n";
}

}  // namespace kiln::cli
