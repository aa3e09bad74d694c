// add_test_algorithm (see test_algorithms.h).
#include "passes/lower/test_algorithms.h"

#include <mutex>

namespace kiln::passes::lower {

void add_test_algorithm(const std::string& op, AlgorithmLowering a) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const LoweringTable& table = lowering_table();
  auto it = table.find(op);
  KILN_INTERNAL_CHECK(it != table.end() && !it->second.algorithms.empty(),
                      "add_test_algorithm: op '" << op << "' has no algorithm candidates");
  // The map is const for its readers; its elements live in the map's nodes
  // and are not const objects. This is the one sanctioned writer, under the
  // precondition in the header (no concurrent compile).
  auto& entry = const_cast<OpLowering&>(it->second);
  for (const AlgorithmLowering& b : entry.algorithms) {
    KILN_INTERNAL_CHECK(b.name != a.name, "add_test_algorithm: " << op
                                                                 << " already has a candidate '"
                                                                 << a.name << "'");
  }
  entry.algorithms.push_back(std::move(a));
}

}  // namespace kiln::passes::lower
