// The `kiln` command-line driver (placeholder until the driver work lands).
#include <cstdio>

int main() {
  std::puts("kiln");
  return 0;
}
