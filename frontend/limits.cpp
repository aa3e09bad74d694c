// Compile-time budgets of the script frontend (see limits.h).
#include "frontend/limits.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace kiln::frontend {

namespace {

// The variable's value, or `fallback` with a warning (once per process and
// text) when it is set but not a valid budget.
int64_t budget_from_env(const char* env, int64_t fallback) {
  const char* text = std::getenv(env);
  if (!text) return fallback;
  if (std::optional<int64_t> v = parse_budget(text)) return *v;
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(std::string(env) + "=" + text).second) {
    std::fprintf(stderr, "kiln: warning: %s='%.40s' is not an integer from 1 to 2^62; using %lld\n",
                 env, text, static_cast<long long>(fallback));
  }
  return fallback;
}

}  // namespace

std::optional<int64_t> parse_budget(const std::string& text) {
  size_t b = text.find_first_not_of(" \t");
  size_t e = text.find_last_not_of(" \t");
  if (b == std::string::npos) return std::nullopt;
  int64_t v = 0;
  for (size_t k = b; k <= e; ++k) {
    char c = text[k];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > kMaxBudget) return std::nullopt;  // checked before it could overflow
  }
  if (v < 1) return std::nullopt;
  return v;
}

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
