// `kiln check FILE`: parses and verifies a .kir graph and prints it back in
// canonical text form; for a script, parses it and lists its defs.
#include <cstdio>

#include "tools/driver.h"

namespace kiln::cli {

namespace {
constexpr const char* kHelp =
    "usage: kiln check FILE\n"
    "\n"
    "FILE.kir: parses the graph, verifies it (SSA order, op operands and attributes,\n"
    "recorded types against inference) and prints it in canonical text form.\n"
    "A script (.kiln, .py): parses it and prints each def's parameters.\n"
    "Errors are printed as FILE:LINE:COL: error: ... with the source line.\n"
    "\n"
    "options:\n"
    "  -h, --help   show this help\n";
}  // namespace

int cmd_check(const Args& args) {
  ArgReader r("check", args);
  std::optional<std::string> file;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (auto p = r.positional(); p && !file) {
      file = p;
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(file, "check: missing FILE (see 'kiln check --help')");
  Program p = load_program(*file);
  if (!p.is_script) {
    std::fputs(p.graph.str().c_str(), stdout);
    return 0;
  }
  for (const ScriptFunction& f : p.script->functions()) {
    std::string params;
    for (const ScriptParam& q : f.params) {
      params += (params.empty() ? "" : ", ") + q.name + ": " +
                (q.annotation.empty() ? param_kind_name(q.kind) : q.annotation);
      if (q.has_default) params += " = " + q.default_value.str();
    }
    std::printf("def %s(%s)\n", f.name.c_str(), params.c_str());
  }
  return 0;
}

}  // namespace kiln::cli
