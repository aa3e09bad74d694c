// "conv.winograd" (stub).
#include "passes/lower/conv.h"

namespace kiln::passes::lower {

AlgorithmLowering conv_winograd() {
  AlgorithmLowering a;
  a.name = "conv.winograd";
  a.applies = [](const ir::Node&, const CpuTarget&, std::string* why_not) {
    *why_not = "not implemented";
    return false;
  };
  a.score = [](const ir::Node&, const CpuTarget&, std::string*) { return 0.0; };
  return a;
}

}  // namespace kiln::passes::lower
