#include "passes/lower/op_backends.h"

#include "passes/lower/lower_internal.h"

namespace kiln::passes {

std::vector<std::string> op_backends(const ir::OpDef& op) {
  std::vector<std::string> out;
  const lower::LoweringTable& table = lower::lowering_table();
  auto it = table.find(op.name);
  // Constants become operands of the kernels that read them.
  bool lowers = it != table.end() || op.name == "constant";
  bool gpu = lowers;
  if (it != table.end() && !it->second.algorithms.empty()) {
    gpu = false;
    for (const lower::AlgorithmLowering& a : it->second.algorithms) gpu = gpu || a.serves(TargetKind::CUDA);
  }
  if (lowers) out.insert(out.end(), {"llvm", "loop-eval"});
  if (op.reference) out.push_back("interp");
  if (gpu) out.insert(out.end(), {"sim", "cuda"});
  return out;
}

}  // namespace kiln::passes
