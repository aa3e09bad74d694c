// Value and error assertions shared by the reduction and normalization op
// tests (ops_reduction_test.cpp, ops_normalization_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "conformance_corpus.h"
#include "op_test_util.h"

namespace kiln::test {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

// Values equal within `tol` (relative to magnitude); NaN must match NaN and
// an infinity must match exactly.
inline void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size()) << t.to_string();
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << "element " << i << " of " << t.to_string();
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
          << "element " << i << " of " << t.to_string();
    }
  }
}

// Runs f, which must throw kiln::Error whose message holds every `parts`.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
    }
    return;
  }
  ADD_FAILURE() << "expected a kiln::Error";
}

// --- PyTorch conformance data (conformance_corpus.h) ----------------------------------------
// A test that reads it starts with KILN_SKIP_WITHOUT_CORPUS().

inline std::string conformance_file(const std::string& case_id, const std::string& file) {
  return (conformance_dir() / "cases" / case_id / file).string();
}
inline Tensor case_input(const std::string& case_id, const std::string& name) {
  return read_npy(conformance_file(case_id, "input_" + name + ".npy"));
}

// Checks `got` against output_<index>.npy of the case like torch.allclose
// (|got - want| <= atol + rtol * |want|, NaN matching NaN), plus dtype and shape.
inline void expect_case_output(const Tensor& got, const std::string& case_id, int index,
                               double rtol, double atol) {
  Tensor want = read_npy(conformance_file(case_id, "output_" + std::to_string(index) + ".npy"));
  ASSERT_EQ(got.dtype(), want.dtype()) << case_id << " output " << index;
  ASSERT_EQ(got.sizes(), want.sizes()) << case_id << " output " << index;
  std::vector<double> g = values_of(got), w = values_of(want);
  int reported = 0;
  for (size_t i = 0; i < w.size() && reported < 5; ++i) {
    bool ok = std::isnan(w[i])   ? std::isnan(g[i])
              : std::isinf(w[i]) ? g[i] == w[i]
                                 : std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
    if (!ok) {
      ++reported;
      ADD_FAILURE() << case_id << " output " << index << " element " << i << ": got " << g[i]
                    << ", torch " << w[i];
    }
  }
}

}  // namespace kiln::test
