// `kiln ops [NAME] [--category C]`: the op registry as users see it — one
// signature per line, or one op's signature and doc.
#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/driver.h"

namespace kiln::cli {

namespace {
constexpr const char* kHelp =
    "usage: kiln ops [NAME] [--category CATEGORY] [--family FAMILY]\n"
    "\n"
    "Lists every registered op grouped by family (elementwise, activation,\n"
    "pointwise, reduction, scan, selection, indexing, normalization, contraction,\n"
    "conv, pool, layout, creation, ...), one per line as its signature, the\n"
    "dtypes it accepts and the backends that run it:\n"
    "  name(operand: Kind, ...) {attr: kind = default, ...} -> category"
    "  [dtypes: ...; backends: ...]\n"
    "With NAME, shows that op's signature, documentation, family, dtypes and\n"
    "backends.\n"
    "\n"
    "options:\n"
    "  --category C   only ops of category C (elementwise, reduction, contraction,\n"
    "                 layout, other)\n"
    "  --family F     only ops of family F\n"
    "  -h, --help     show this help\n";

// The order families are listed in; a family not named here (a new
// ir/ops/<family>.cpp) follows, alphabetically.
const char* const kFamilyOrder[] = {"elementwise", "activation",    "pointwise",   "reduction",
                                    "scan",        "selection",     "indexing",    "normalization",
                                    "contraction", "conv",          "pool",        "layout",
                                    "creation",    "other"};

int family_rank(const std::string& f) {
  int k = 0;
  for (const char* name : kFamilyOrder) {
    if (f == name) return k;
    ++k;
  }
  return k;
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (const std::string& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// "all", "float", "float, int", or the list; "?" when the probe found none.
std::string dtypes_str(const std::vector<std::string>& d) {
  if (d.empty()) return "? (depends on the arguments)";
  auto has = [&](const char* t) { return std::find(d.begin(), d.end(), t) != d.end(); };
  bool floats = has("f16") && has("bf16") && has("f32") && has("f64");
  bool ints = has("i8") && has("u8") && has("i16") && has("i32") && has("i64");
  size_t n = (floats ? 4 : 0) + (ints ? 5 : 0) + (has("bool") ? 1 : 0);
  if (n == d.size() && floats) {
    if (ints && has("bool")) return "all";
    if (ints) return "float, int";
    if (!has("bool")) return "float";
  }
  return join(d);
}

std::string listing(const OpInfo& op) {
  return op.signature + "  [dtypes: " + dtypes_str(op.dtypes) + "; backends: " +
         join(op.backends) + "]";
}

const char* const kCategories[] = {"elementwise", "reduction", "contraction", "layout", "other"};
}  // namespace

int cmd_ops(const Args& args) {
  ArgReader r("ops", args);
  std::optional<std::string> name, category, family;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (auto c = r.value({"category"})) {
      category = c;
    } else if (auto f = r.value({"family"})) {
      family = f;
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
    std::printf("  family: %s\n  dtypes: %s\n  backends: %s\n", op->family.c_str(),
                dtypes_str(op->dtypes).c_str(), join(op->backends).c_str());
    return 0;
  }
  if (category) {
    bool known = false;
    for (const char* c : kCategories) known = known || *category == c;
    KILN_USER_CHECK(known, "ops: unknown category '" << *category
                                                     << "'; known categories: elementwise, "
                                                        "reduction, contraction, layout, other");
  }
  std::vector<OpInfo> ops = list_ops();
  if (family) {
    std::set<std::string> known;
    for (const OpInfo& op : ops) known.insert(op.family);
    KILN_USER_CHECK(known.count(*family), "ops: unknown family '" << *family
                                                                 << "'; known families: "
                                                                 << join({known.begin(), known.end()}));
  }
  std::stable_sort(ops.begin(), ops.end(), [](const OpInfo& a, const OpInfo& b) {
    int ra = family_rank(a.family), rb = family_rank(b.family);
    return ra != rb ? ra < rb : a.family < b.family;  // by name within a family (list_ops)
  });
  std::string current;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpInfo& op = ops[i];
    if ((category && op.category != *category) || (family && op.family != *family)) continue;
    if (op.family != current) {
      size_t n = 0;
      for (size_t j = i; j < ops.size() && ops[j].family == op.family; ++j) {
        n += !(category && ops[j].category != *category);
      }
      std::printf("%s== %s (%zu op%s)\n", current.empty() ? "" : "\n", op.family.c_str(), n,
                  n == 1 ? "" : "s");
      current = op.family;
    }
    std::printf("%s\n", listing(op).c_str());
  }
  return 0;
}

}  // namespace kiln::cli
