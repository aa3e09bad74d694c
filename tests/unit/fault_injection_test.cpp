// An internal error inside a transform always surfaces: with a fault point
// armed in vectorize / vectorize_reduction (runtime/fault_injection.h),
// compile() of an elementwise function, a row and a column reduction, a GEMM
// micro-tile and a GEMV's dot products throws kiln::InternalError instead of producing
// scalar code; unarmed, the same functions compile to vector lanes. Points
// are armed through the test hook, each test restoring what it found, and
// every compile bypasses the in-memory function cache (a hit would skip
// scheduling).
#include <gtest/gtest.h>

#include <memory>

#include "ir/graph.h"
#include "kiln/compile.h"
#include "kiln/error.h"
#include "runtime/fault_injection.h"

namespace kiln {
namespace {

using ir::Dim;

// Arms one fault point for a scope.
class ArmedFault {
 public:
  explicit ArmedFault(const std::string& name) : before_(runtime::arm_fault_point(name)) {}
  ~ArmedFault() { runtime::arm_fault_point(before_); }
  ArmedFault(const ArmedFault&) = delete;
  ArmedFault& operator=(const ArmedFault&) = delete;

 private:
  std::string before_;
};

CompileOptions fresh() {
  CompileOptions o;
  o.use_cache = false;
  o.disk_cache = false;
  return o;
}

// y = x * 2 + 1 over f32[1024]: one elementwise kernel.
std::unique_ptr<ir::Graph> elementwise() {
  auto g = std::make_unique<ir::Graph>("ew");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {1024}));
  ir::Value* m = g->apply1("mul", {x, g->constant(2.0)});
  g->set_outputs({g->apply1("add", {m, g->constant(1.0)})});
  return g;
}

// s = sum(x, dim 1) over f32[16, 256]: a row reduction.
std::unique_ptr<ir::Graph> row_sum() {
  auto g = std::make_unique<ir::Graph>("rs");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {16, 256}));
  g->set_outputs({g->apply1("sum", {x}, {{"dim", std::vector<int64_t>{1}}})});
  return g;
}

// s = sum(x, dim 0) over f32[64, 256]: the loop over the reduced dim strides
// through memory, so the kept loop around it is vectorized instead.
std::unique_ptr<ir::Graph> column_sum() {
  auto g = std::make_unique<ir::Graph>("cs");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::F32, {64, 256}));
  g->set_outputs({g->apply1("sum", {x}, {{"dim", std::vector<int64_t>{0}}})});
  return g;
}

// a f32[m, k] @ b f32[k, n].
std::unique_ptr<ir::Graph> matmul(int64_t m, int64_t k, int64_t n) {
  auto g = std::make_unique<ir::Graph>("mm");
  ir::Value* a = g->add_input("a", ir::Type::tensor(DType::F32, {m, k}));
  ir::Value* b = g->add_input("b", ir::Type::tensor(DType::F32, {k, n}));
  g->set_outputs({g->apply1("matmul", {a, b})});
  return g;
}

// The message of the InternalError compile() throws, or why there is none.
std::string internal_error_of(const ir::Graph& g) {
  try {
    compile(g, fresh());
  } catch (const InternalError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("<a user error>: ") + e.what();
  }
  return "<compiled>";
}

bool vectorized(const ir::Graph& g) {
  return compile(g, fresh()).dump("loops-scheduled").find("ramp(") != std::string::npos;
}

TEST(FaultInjection, APointThrowsOnlyWhenArmed) {
  ArmedFault none("");
  EXPECT_NO_THROW(runtime::fault_point("vectorize"));
  {
    ArmedFault other("something_else");
    EXPECT_NO_THROW(runtime::fault_point("vectorize"));
    try {
      runtime::fault_point("something_else");
      ADD_FAILURE() << "the armed point did not throw";
    } catch (const InternalError& e) {
      EXPECT_STREQ(e.what(),
                   "internal error: injected fault at something_else (KILN_INJECT_FAULT)");
    }
  }
  EXPECT_NO_THROW(runtime::fault_point("something_else"));  // restored
}

TEST(FaultInjection, UnarmedTheKernelsAreVectorized) {
  ArmedFault none("");
  EXPECT_TRUE(vectorized(*elementwise()));
  EXPECT_TRUE(vectorized(*row_sum()));
  EXPECT_TRUE(vectorized(*column_sum()));
  EXPECT_TRUE(vectorized(*matmul(64, 64, 64)));
  EXPECT_TRUE(vectorized(*matmul(16, 64, 1)));
}

TEST(FaultInjection, AFaultInVectorizeSurfacesFromCompile) {
  ArmedFault f("vectorize");
  const std::string want = "internal error: injected fault at vectorize (KILN_INJECT_FAULT)";
  EXPECT_EQ(internal_error_of(*elementwise()), want);       // default_schedule, pointwise nest
  EXPECT_EQ(internal_error_of(*row_sum()), want);           // default_schedule, reduction nest
  EXPECT_EQ(internal_error_of(*matmul(64, 64, 64)), want);  // the GEMM's micro-tile
}

TEST(FaultInjection, AFaultInVectorizeReductionSurfacesFromCompile) {
  ArmedFault f("vectorize_reduction");
  const std::string want =
      "internal error: injected fault at vectorize_reduction (KILN_INJECT_FAULT)";
  EXPECT_EQ(internal_error_of(*row_sum()), want);              // default_schedule
  EXPECT_EQ(internal_error_of(*matmul(16, 64, 1)), want);      // GEMV dot products
  EXPECT_EQ(internal_error_of(*elementwise()), "<compiled>");  // no reduction in it
}

}  // namespace
}  // namespace kiln
