// `kiln backends`: the backends this Kiln knows and the devices it sees, each
// usable or not and, when not, what is missing (a backend not built, a driver
// library not found, no such device).
#include <cstdio>

#include "kiln/compile.h"
#include "tools/driver.h"

namespace kiln::cli {

int cmd_backends(const Args& args) {
  ArgReader r("backends", args);
  while (!r.done()) {
    if (r.help()) {
      std::fputs(
          "usage: kiln backends\n"
          "\n"
          "Lists the backends (what runs the kernels, and on which devices) and the\n"
          "devices (--device of 'kiln run', 'explain' and 'dump'), each available or\n"
          "with what is missing.\n",
          stdout);
      return 0;
    }
    r.unknown();
  }
  std::printf("backends:\n");
  for (const BackendInfo& b : available_backends()) {
    std::string devs;
    for (const std::string& d : b.devices) devs += (devs.empty() ? "" : ", ") + d;
    std::printf("  %-10s %s (runs on %s)\n", b.name.c_str(),
                b.available ? "available" : "unavailable", devs.c_str());
    std::printf("             %s\n",
                b.available ? b.description.c_str() : b.why_unavailable.c_str());
  }
  std::printf("devices:\n");
  for (const DeviceInfo& d : devices()) {
    std::string dev = d.device.str();
    if (d.available) {
      std::printf("  %-10s %s (default backend: %s)\n", dev.c_str(), d.name.c_str(),
                  default_backend(d.device).c_str());
    } else {
      std::printf("  %-10s unavailable: %s\n", dev.c_str(), d.why_unavailable.c_str());
    }
  }
  return 0;
}

}  // namespace kiln::cli
