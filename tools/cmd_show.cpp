// `kiln show FILE.npy`: prints an array file's dtype, shape and values. Not in
// the main command list, but documented (docs/cli.md) and used by the CLI tests
// to read back what `kiln run --output` wrote.
#include <cstdio>

#include "tools/driver.h"

namespace kiln::cli {

namespace {
constexpr const char* kHelp =
    "usage: kiln show FILE.npy... [--max N]\n"
    "\n"
    "Prints each .npy file's dtype and shape, then its values (elided beyond N\n"
    "elements, like torch).\n"
    "\n"
    "options:\n"
    "  --max N      print up to N elements in full (default 64)\n"
    "  -h, --help   show this help\n";
}  // namespace

int cmd_show(const Args& args) {
  ArgReader r("show", args);
  std::vector<std::string> files;
  int64_t max_elements = 64;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (auto m = r.value({"max"})) {
      Attr v = parse_value("--max", *m, ParamKind::Int);
      max_elements = std::get<int64_t>(v.storage());
      KILN_USER_CHECK(max_elements >= 0, "show: --max must be >= 0, got " << max_elements);
    } else if (auto p = r.positional()) {
      files.push_back(*p);
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(!files.empty(), "show: missing FILE.npy (see 'kiln show --help')");
  for (const std::string& f : files) {
    Tensor t = read_npy(f);
    std::vector<Dim> dims(t.sizes().begin(), t.sizes().end());
    std::printf("%s: %s\n%s\n", f.c_str(), TensorSpec{t.dtype(), dims}.str().c_str(),
                t.to_string(max_elements).c_str());
  }
  return 0;
}

}  // namespace kiln::cli
