// `kiln ops [NAME] [--category C]`: the op registry as users see it — one
// signature per line, or one op's signature and doc.
#include <cstdio>

#include "tools/driver.h"

namespace kiln::cli {

namespace {
constexpr const char* kHelp =
    "usage: kiln ops [NAME] [--category CATEGORY]\n"
    "\n"
    "Lists every registered op, one per line as its signature:\n"
    "  name(operand: Kind, ...) {attr: kind = default, ...} -> category\n"
    "With NAME, shows that op's signature and documentation.\n"
    "\n"
    "options:\n"
    "  --category C   only ops of category C (elementwise, reduction, contraction,\n"
    "                 layout, other)\n"
    "  -h, --help     show this help\n";

const char* const kCategories[] = {"elementwise", "reduction", "contraction", "layout", "other"};
}  // namespace

int cmd_ops(const Args& args) {
  ArgReader r("ops", args);
  std::optional<std::string> name, category;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (auto c = r.value({"category"})) {
      category = c;
    } else if (auto p = r.positional(); p && !name) {
      name = p;
    } else {
      r.unknown();
    }
  }
  if (name) {
    std::optional<OpInfo> op = find_op(*name);
    if (!op) {
      std::string msg = "unknown op '" + *name + "'";
      std::vector<std::string> near = suggest_ops(*name);
      for (size_t i = 0; i < near.size(); ++i) {
        msg += (i ? ", " : "; did you mean: ") + near[i];
      }
      throw Error(msg + (near.empty() ? "" : "?") + " (see 'kiln ops' for the list)");
    }
    std::printf("%s\n", op->signature.c_str());
    if (!op->doc.empty()) std::printf("  %s\n", op->doc.c_str());
    return 0;
  }
  if (category) {
    bool known = false;
    for (const char* c : kCategories) known = known || *category == c;
    KILN_USER_CHECK(known, "ops: unknown category '" << *category
                                                     << "'; known categories: elementwise, "
                                                        "reduction, contraction, layout, other");
  }
  for (const OpInfo& op : list_ops()) {
    if (category && op.category != *category) continue;
    std::printf("%s\n", op.signature.c_str());
  }
  return 0;
}

}  // namespace kiln::cli
