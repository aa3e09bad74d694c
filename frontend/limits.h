// Compile-time budgets of the script frontend.
//
// Control flow runs at compile time (loops are unrolled, calls inlined), so a
// short script can ask for unbounded work: nested loops, a list repeated 10**8
// times, a tuple doubled in a loop. These budgets bound that work for a whole
// compile; going past one is a located user error that names the environment
// variable which raises it.
//
//   KILN_MAX_LOOP_ITERATIONS     4096    iterations of one unrolled for loop
//   KILN_MAX_UNROLLED_ITERATIONS 65536   loop iterations of one compile, all loops together
//   KILN_MAX_GRAPH_NODES         200000  nodes of the graph one compile builds
//   KILN_MAX_SEQUENCE_LENGTH     65536   length of a compile-time list, tuple, string or range()
//
// A value must be a decimal integer from 1 to 2^62; anything else is ignored
// with a warning on stderr (once per process and value) and the default used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::frontend {

struct CompileBudgets {
  int64_t loop_iterations = 4096;
  int64_t unrolled_iterations = 65536;
  int64_t graph_nodes = 200000;
  int64_t sequence_length = 65536;

  // The defaults above, overridden by the environment variables.
  static CompileBudgets from_env();
};

inline constexpr int64_t kMaxBudget = int64_t(1) << 62;

// " (limit: NAME=VALUE)": the tail of a budget error, naming the variable.
std::string budget_note(const char* env, int64_t value);

}  // namespace kiln::frontend
