// The schedule transforms' checks (why_not_split, why_not_vectorize, ...): for
// each, loops it applies to and loops it does not (with the exact reason), and
// that the transform agrees: it returns when its check says it applies and
// otherwise throws kiln::Error (never an InternalError) with the check's
// reason as its message. Also: a failure after part of a loop was already
// widened stops the rewrite cleanly instead of building an invalid node.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {
namespace {

using namespace kiln::loop;  // NOLINT
using Why = std::optional<std::string>;

Expr var(const char* n) {
  return Var::make(i64_t(), n);
}
Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}
Stmt loop(const char* v, const Expr& extent, Stmt body) {
  return For::make(var(v), make_int(0), extent, ForKind::Serial, std::move(body));
}

// `got` (what the check said) is `want`, and the transform agrees with it.
void expect_check(const Why& got, const Why& want, const std::function<Stmt()>& transform) {
  EXPECT_EQ(got, want);
  if (!got) {
    Stmt out;
    EXPECT_NO_THROW(out = transform());
    EXPECT_TRUE(out.defined());
    return;
  }
  try {
    transform();
    ADD_FAILURE() << "the transform applied although its check says: " << *got;
  } catch (const InternalError& e) {
    ADD_FAILURE() << "internal error where the check says '" << *got << "': " << e.what();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), *got);
  }
}

struct Bufs {
  Buf x = make_buf("x", DType::F32), y = make_buf("y", DType::F32);
  Buf acc = make_buf("acc", DType::F32), t = make_buf("t", DType::F32);
  Expr xi = Load::make(x, var("i"));
  // y[i] = x[i] * 2 over i in [0, extent).
  Stmt scale(const Expr& extent) const {
    return loop("i", extent, Store::make(y, var("i"), xi * f32(2)));
  }
};

void vectorize_case(const Stmt& s, const std::string& v, const Why& want) {
  SCOPED_TRACE(to_string(s));
  expect_check(why_not_vectorize(s, v), want, [&] { return vectorize(s, v); });
}

TEST(ScheduleChecks, Vectorize) {
  Bufs b;
  vectorize_case(b.scale(make_int(8)), "i", std::nullopt);
  vectorize_case(b.scale(make_int(1)), "i", std::nullopt);
  vectorize_case(b.scale(make_int(64)), "i", std::nullopt);
  // A guard on the lanes becomes a predicate.
  vectorize_case(loop("i", make_int(8),
                      IfThenElse::make(var("i") < var("n"), Store::make(b.y, var("i"), b.xi))),
                 "i", std::nullopt);
  // Scratch allocated inside gets one slot per lane.
  vectorize_case(
      loop("i", make_int(8),
           Allocate::make(b.t, make_int(1), MemoryScope::Stack,
                          Block::make({Store::make(b.t, make_int(0), b.xi),
                                       Store::make(b.y, var("i"), Load::make(b.t, make_int(0)))}))),
      "i", std::nullopt);

  vectorize_case(b.scale(make_int(8)), "q", "vectorize: no loop named 'q'");
  vectorize_case(b.scale(var("n")), "i",
                 "vectorize: loop 'i' needs a constant extent in [1, 64], got n");
  vectorize_case(b.scale(make_int(65)), "i",
                 "vectorize: loop 'i' needs a constant extent in [1, 64], got 65");
  vectorize_case(b.scale(make_int(0)), "i",
                 "vectorize: loop 'i' needs a constant extent in [1, 64], got 0");
  vectorize_case(
      loop("i", make_int(8),
           Store::make(b.y, Ramp::make(var("i"), make_int(1), 4), Broadcast::make(f32(1), 4))),
      "i", "vectorize: loop 'i': already holds vector lanes");
  vectorize_case(loop("i", make_int(8), ExternCall::make("kiln_sgemm", {var("i")}, {b.x})), "i",
                 "vectorize: loop 'i': holds an extern call");
  vectorize_case(loop("i", make_int(8), Store::make(b.acc, make_int(0), b.xi)), "i",
                 "vectorize: loop 'i': a value that differs by lane is stored to one location "
                 "of acc");
  vectorize_case(
      loop("i", make_int(8),
           Allocate::make(b.t, make_int(8), MemoryScope::Stack, Store::make(b.t, var("i"), b.xi))),
      "i", "vectorize: loop 'i': scratch t is indexed by the lanes");
  vectorize_case(loop("i", make_int(8),
                      loop("j", var("i"), Store::make(b.y, var("j"), Load::make(b.x, var("j"))))),
                 "i", "vectorize: loop 'i': the bounds of inner loop j use the lanes");
}

TEST(ScheduleChecks, VectorizeStopsAtTheFirstFailure) {
  Bufs b;
  // The first store is widened before the second one fails; the reason is the
  // second's, and nothing half-widened is built (no InternalError).
  Stmt two = loop("i", make_int(8),
                  Block::make({Store::make(b.y, var("i"), b.xi * f32(2)),
                               Store::make(b.acc, make_int(0), b.xi)}));
  vectorize_case(two, "i",
                 "vectorize: loop 'i': a value that differs by lane is stored to one location "
                 "of acc");
  // A widened operand next to one that fails, inside one expression.
  Stmt mixed = loop("i", make_int(8),
                    Allocate::make(b.t, make_int(8), MemoryScope::Stack,
                                   Store::make(b.y, var("i"), b.xi + Load::make(b.t, var("i")))));
  vectorize_case(mixed, "i", "vectorize: loop 'i': scratch t is indexed by the lanes");
  // Two loops of one name (split's PredicatedTail): the second one fails, so
  // neither is vectorized.
  Stmt both = Block::make({b.scale(make_int(8)), b.scale(var("n"))});
  vectorize_case(both, "i", "vectorize: loop 'i' needs a constant extent in [1, 64], got n");
  // The first of two failures is the one reported.
  Stmt first =
      loop("i", make_int(8),
           Block::make({ExternCall::make("f", {}, {}), Store::make(b.acc, make_int(0), b.xi)}));
  vectorize_case(first, "i", "vectorize: loop 'i': holds an extern call");
}

void split_case(const Stmt& s, const std::string& v, const Expr& factor, TailStrategy tail,
                const Why& want) {
  SCOPED_TRACE(to_string(s) + " by " + (factor.defined() ? to_string(factor) : "<undefined>"));
  expect_check(why_not_split(s, v, factor, tail), want,
               [&] { return split(s, v, factor, "o", "in", tail); });
}

TEST(ScheduleChecks, Split) {
  Bufs b;
  for (TailStrategy tail : {TailStrategy::GuardWithIf, TailStrategy::Predicate,
                            TailStrategy::PredicatedTail, TailStrategy::ShortenLast}) {
    split_case(b.scale(var("n")), "i", make_int(4), tail, std::nullopt);
    split_case(b.scale(make_int(3)), "i", make_int(4), tail, std::nullopt);
    split_case(b.scale(var("n")), "i", var("f"), tail, std::nullopt);
    split_case(b.scale(var("n")), "q", make_int(4), tail, "split: no loop named 'q'");
    split_case(b.scale(var("n")), "i", make_int(0), tail,
               "split: factor must be >= 1, got 0 (loop 'i')");
    split_case(b.scale(var("n")), "i", Var::make({DType::I32, 1}, "f"), tail,
               "split: factor must be an i64 scalar (loop 'i')");
    split_case(b.scale(var("n")), "i", Expr(), tail,
               "split: factor must be an i64 scalar (loop 'i')");
  }
  // ShiftInwards recomputes the last chunk, so it needs a whole chunk to shift
  // back into, and a constant factor to shift by (unless the factor divides).
  const TailStrategy shift = TailStrategy::ShiftInwards;
  split_case(b.scale(var("n")), "i", make_int(4), shift, std::nullopt);
  split_case(b.scale(make_int(9)), "i", make_int(4), shift, std::nullopt);
  split_case(b.scale(make_int(2)), "i", make_int(2), shift, std::nullopt);
  split_case(b.scale(make_int(3)), "i", make_int(4), shift,
             "split: ShiftInwards needs extent >= factor, loop 'i' has extent 3");
  split_case(b.scale(var("n")), "i", var("f"), shift,
             "split: ShiftInwards needs a constant factor (loop 'i')");
  // The integer overload checks the same.
  EXPECT_EQ(why_not_split(b.scale(var("n")), "i", 8, TailStrategy::PredicatedTail), std::nullopt);
  EXPECT_EQ(why_not_split(b.scale(var("n")), "i", -2),
            "split: factor must be >= 1, got -2 (loop 'i')");
  EXPECT_THROW(split(b.scale(var("n")), "i", -2, "o", "in"), Error);
}

void reduction_case(const Stmt& s, const std::string& v, int lanes, int accumulators,
                    const Why& want) {
  SCOPED_TRACE(to_string(s));
  expect_check(why_not_vectorize_reduction(s, v, lanes, accumulators), want,
               [&] { return vectorize_reduction(s, v, lanes, accumulators); });
}

TEST(ScheduleChecks, VectorizeReduction) {
  Bufs b;
  Expr a0 = Load::make(b.acc, make_int(0)), xr = Load::make(b.x, var("r"));
  auto rloop = [](Stmt body) { return loop("r", var("n"), std::move(body)); };
  Stmt sum = rloop(Store::make(b.acc, make_int(0), a0 + xr));
  reduction_case(sum, "r", 8, 4, std::nullopt);
  reduction_case(sum, "r", 1, 1, std::nullopt);
  reduction_case(rloop(Store::make(b.acc, make_int(0), max(xr, a0))), "r", 16, 2, std::nullopt);
  // Elementwise stores alongside the accumulation.
  reduction_case(rloop(Block::make({Store::make(b.acc, make_int(0), a0 + xr),
                                    Store::make(b.y, var("r"), xr * f32(2))})),
                 "r", 8, 4, std::nullopt);

  const std::string r = "vectorize_reduction: loop 'r': ";
  reduction_case(sum, "r", 0, 4,
                 r + "lanes must be in [1, 64] and accumulators in [1, 16], got 0 and 4");
  reduction_case(sum, "r", 8, 17,
                 r + "lanes must be in [1, 64] and accumulators in [1, 16], got 8 and 17");
  reduction_case(sum, "q", 8, 4, "vectorize_reduction: no loop named 'q'");
  reduction_case(rloop(IfThenElse::make(xr > a0, Store::make(b.acc, make_int(0), xr))), "r", 8, 4,
                 r + "holds a branch");
  reduction_case(rloop(loop("j", make_int(2), Store::make(b.acc, make_int(0), a0 + xr))), "r", 8, 4,
                 r + "holds an inner loop");
  reduction_case(rloop(Allocate::make(b.t, make_int(1), MemoryScope::Stack,
                                      Store::make(b.acc, make_int(0), a0 + xr))),
                 "r", 8, 4, r + "allocates");
  reduction_case(rloop(ExternCall::make("f", {}, {})), "r", 8, 4, r + "holds an extern call");
  reduction_case(
      rloop(Store::make(b.y, Ramp::make(var("r"), make_int(1), 4), Broadcast::make(f32(0), 4))),
      "r", 8, 4, r + "already holds vector lanes");
  reduction_case(rloop(Store::make(b.acc, make_int(0), xr)), "r", 8, 4,
                 r + "the store to acc does not depend on the loop variable and is not an "
                     "accumulation");
  reduction_case(rloop(Store::make(b.acc, make_int(0), a0 / xr)), "r", 8, 4,
                 r + "the store to acc does not depend on the loop variable and is not an "
                     "accumulation");
  reduction_case(rloop(Block::make({Store::make(b.acc, make_int(0), a0 + xr),
                                    Store::make(b.acc, make_int(0), a0 * xr)})),
                 "r", 8, 4, r + "acc is updated twice");
  reduction_case(rloop(Block::make({Store::make(b.y, var("r"), xr),
                                    Store::make(b.y, var("r") + make_int(1), xr)})),
                 "r", 8, 4, r + "y is written at two different elements");
  reduction_case(rloop(Store::make(b.y, var("r"), Load::make(b.y, var("r") - make_int(1)))), "r", 8,
                 4, r + "y is read at another element than the one written");
  reduction_case(rloop(Block::make(
                     {Store::make(b.acc, make_int(0), a0 + xr), Store::make(b.y, var("r"), a0)})),
                 "r", 8, 4, r + "accumulator acc is read outside its update");
}

TEST(ScheduleChecks, Unroll) {
  Bufs b;
  auto unroll_case = [](const Stmt& s, const std::string& v, const Why& want) {
    SCOPED_TRACE(to_string(s));
    expect_check(why_not_unroll(s, v), want, [&] { return unroll(s, v); });
  };
  unroll_case(b.scale(make_int(4)), "i", std::nullopt);
  unroll_case(b.scale(make_int(0)), "i", std::nullopt);
  unroll_case(b.scale(make_int(1024)), "i", std::nullopt);
  unroll_case(b.scale(make_int(4)), "q", "unroll: no loop named 'q'");
  unroll_case(b.scale(var("n")), "i", "unroll: loop 'i' needs constant bounds, got min 0 extent n");
  unroll_case(
      For::make(var("i"), var("m"), make_int(4), ForKind::Serial, Store::make(b.y, var("i"), b.xi)),
      "i", "unroll: loop 'i' needs constant bounds, got min m extent 4");
  unroll_case(b.scale(make_int(1025)), "i",
              "unroll: loop 'i' has 1025 iterations (at most 1024 unroll)");
}

TEST(ScheduleChecks, ParallelizeAndReorder) {
  Bufs b;
  Stmt body = Store::make(b.y, var("i") * make_int(3) + var("j"), Load::make(b.x, var("j")));
  Stmt nest = loop("i", var("n"), loop("j", make_int(3), body));
  expect_check(why_not_parallelize(nest, "j"), std::nullopt,
               [&] { return parallelize(nest, "j"); });
  expect_check(why_not_parallelize(nest, "q"), "parallelize: no loop named 'q'",
               [&] { return parallelize(nest, "q"); });

  expect_check(why_not_reorder(nest, "i", "j"), std::nullopt,
               [&] { return reorder(nest, "i", "j"); });
  expect_check(why_not_reorder(nest, "q", "j"), "reorder: no loop named 'q'",
               [&] { return reorder(nest, "q", "j"); });
  expect_check(why_not_reorder(nest, "j", "i"), "reorder: loop 'i' is not directly inside loop 'j'",
               [&] { return reorder(nest, "j", "i"); });
  Stmt triangle = loop("i", var("n"), loop("j", var("i"), body));
  expect_check(why_not_reorder(triangle, "i", "j"), "reorder: the bounds of loop 'j' depend on 'i'",
               [&] { return reorder(triangle, "i", "j"); });
}

}  // namespace
}  // namespace kiln::passes
