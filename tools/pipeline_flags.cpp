// The pipeline flags `kiln run` and `kiln dump` share: which passes' output
// to print and whether to time them (kiln::OptimizeOptions), for the graph
// pipeline and the loop pipeline alike.
#include <algorithm>

#include "tools/driver.h"

namespace kiln::cli {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

bool read_pipeline_flag(ArgReader& r, OptimizeOptions* o) {
  if (r.flag("print-after-all")) {
    o->print_after_all = true;
  } else if (r.flag("time-passes")) {
    o->time_passes = true;
  } else if (auto v = r.value({"print-after"})) {
    std::vector<std::string> graph = graph_pass_names(), loops = loop_pass_names();
    bool known = std::find(graph.begin(), graph.end(), *v) != graph.end() ||
                 std::find(loops.begin(), loops.end(), *v) != loops.end();
    KILN_USER_CHECK(known, "--print-after: unknown pass '" << *v << "'; passes: " << joined(graph)
                                                           << " (graph); " << joined(loops)
                                                           << " (loop)");
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
  return "  --print-after-all    print the IR after each pass: the graph after each graph\n"
         "                       pass, the kernels after each loop pass; a pass that\n"
         "                       changed nothing prints '// (unchanged)'\n"
         "  --print-after PASS   print the IR after one pass, changed or not; PASS:\n"
         "                       " +
         joined(graph_pass_names()) +
         " (graph);\n"
         "                       " +
         joined(loop_pass_names()) +
         " (loop)\n"
         "  --time-passes        after the passes, a table of each one's time in ms\n"
         "                       " +
         where + "\n";
}

}  // namespace kiln::cli
