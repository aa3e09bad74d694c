// Compile-time budgets of the script frontend (see limits.h).
#include "frontend/limits.h"

#include "runtime/env_number.h"

namespace kiln::frontend {

namespace {

// The variable's value; the default (after one warning) when it is set but not
// a whole number from 1 to kMaxBudget.
int64_t budget_from_env(const char* env, int64_t fallback) {
  return static_cast<int64_t>(runtime::env_uint(env, static_cast<uint64_t>(fallback), 1,
                                                static_cast<uint64_t>(kMaxBudget)));
}

}  // namespace

std::string budget_note(const char* env, int64_t value) {
  return " (limit: " + std::string(env) + "=" + std::to_string(value) + ")";
}

CompileBudgets CompileBudgets::from_env() {
  CompileBudgets b;
  b.loop_iterations = budget_from_env("KILN_MAX_LOOP_ITERATIONS", b.loop_iterations);
  b.unrolled_iterations = budget_from_env("KILN_MAX_UNROLLED_ITERATIONS", b.unrolled_iterations);
  b.graph_nodes = budget_from_env("KILN_MAX_GRAPH_NODES", b.graph_nodes);
  b.sequence_length = budget_from_env("KILN_MAX_SEQUENCE_LENGTH", b.sequence_length);
  return b;
}

}  // namespace kiln::frontend
