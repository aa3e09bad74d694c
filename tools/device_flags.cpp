// The flags that pick where and how a function runs, shared by `kiln run`,
// `kiln explain` and `kiln dump`: --device DEV and --backend NAME
// (CompileOptions::device and ::backend; compile() checks that they fit
// together and says what is missing when they are unavailable).
#include "tools/driver.h"

namespace kiln::cli {

bool read_device_flag(ArgReader& r, CompileOptions* o) {
  if (auto v = r.value({"device"})) {
    std::optional<Device> d = Device::parse(*v);
    KILN_USER_CHECK(d, "--device: unknown device '" << *v
                                                    << "'; devices: cpu, sim[:N], cuda[:N] (see "
                                                       "'kiln backends')");
    o->device = *d;
  } else if (auto v = r.value({"backend"})) {
    o->backend = *v;
  } else {
    return false;
  }
  return true;
}

std::string device_flags_help() {
  return "  --device DEV         where the kernels run: cpu (default), sim[:N] (the\n"
         "                       simulated GPU: GPU-mapped kernels run by the loop-IR\n"
         "                       evaluator) or cuda[:N]; inputs are copied there and\n"
         "                       outputs back\n"
         "  --backend NAME       llvm (the CPU default: native code), loop-eval (the\n"
         "                       loop-IR evaluator; sim's default), interp (the\n"
         "                       reference interpreter), cuda; 'kiln backends' lists\n"
         "                       them and why one is unavailable\n";
}

}  // namespace kiln::cli
