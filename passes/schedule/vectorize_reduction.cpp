// vectorize_reduction: vectorizes a loop that accumulates into scalars (see
// schedule.h for the loop nest before and after). Each accumulator becomes
// `accumulators` vector registers of `lanes` lanes that the main loop updates
// independently (no loop-carried chain through one register), the last
// partial chunk updates them under a lane predicate, and the lanes are folded
// back into the scalar at the end, halving the width each step.
//
// Assumes: the loop is innermost and straight-line (Block, LetStmt, Store);
// every store at an index that does not depend on the loop variable is an
// accumulator update `acc[k] = op(acc[k], e)` with op one of + * min max && ||,
// and the accumulator is read nowhere else in the loop; every other store
// writes a different element per iteration, and a buffer it writes is read
// only at the element being written. Guarantees: min/max/&&/|| and integer
// results are exactly those of the scalar loop (the ops are associative and
// commutative, integers wrap); float sums and products are reassociated.
// A loop that breaks an assumption is left alone: the first broken one is
// recorded (why_not_vectorize_reduction reports it) and nothing is built.
#include <map>

#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"
#include "runtime/fault_injection.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT
using schedule_detail::uses_var;

namespace {

struct Accumulator {
  Buf buf;     // the scalar scratch
  Expr index;  // the element it lives at
  BinOp op;
  Buf vec;  // lanes * accumulators partial results
};

bool reassociable(BinOp op) {
  switch (op) {
    case BinOp::Add:
    case BinOp::Mul:
    case BinOp::Min:
    case BinOp::Max:
    case BinOp::And:
    case BinOp::Or:
      return true;
    default:
      return false;
  }
}

// Checks the body and finds its accumulators. It builds nothing, so the walk
// may go on after a failure; only the first reason is kept.
class Analysis : public IRVisitor {
 public:
  Analysis(const std::string& var) : var_(var) {}  // NOLINT
  std::vector<Accumulator> accs;
  std::map<const BufferNode*, Expr> written;  // elementwise stores: buffer -> index
  std::vector<const Load*> loads;
  std::string why_not;  // the first assumption the loop breaks; empty if none

  void fail(const std::string& why) {
    if (why_not.empty()) why_not = "vectorize_reduction: loop '" + var_ + "': " + why;
  }

  // Records the accumulator update a store is, or fails.
  void check_update(const Store* op) {
    const Binary* b = op->value.as<Binary>();
    auto self = [&](const Expr& e) {
      const Load* l = e.as<Load>();
      return l && l->buf == op->buf && !l->predicate.defined() && equal(l->index, op->index);
    };
    if (!b || !reassociable(b->op) || !(self(b->a) || self(b->b)) || op->predicate.defined() ||
        op->value.type().lanes != 1) {
      return fail("the store to " + op->buf->name +
                  " does not depend on the loop variable and is not an accumulation");
    }
    for (const Accumulator& a : accs) {
      if (a.buf == op->buf) return fail(op->buf->name + " is updated twice");
    }
    accs.push_back({op->buf, op->index, b->op, nullptr});
    // The other operand is visited; the self-load is not a foreign read.
    visit(self(b->a) ? b->b : b->a);
    visit(op->index);
  }

 protected:
  using IRVisitor::visit_node;
  void visit_node(const For*) override { fail("holds an inner loop"); }
  void visit_node(const Allocate*) override { fail("allocates"); }
  void visit_node(const IfThenElse*) override { fail("holds a branch"); }
  void visit_node(const ExternCall*) override { fail("holds an extern call"); }
  void visit_node(const Ramp*) override { fail("already holds vector lanes"); }
  void visit_node(const Broadcast*) override { fail("already holds vector lanes"); }
  void visit_node(const Load* op) override {
    loads.push_back(op);
    IRVisitor::visit_node(op);
  }
  void visit_node(const Store* op) override {
    if (!uses_var(op->index, var_)) return check_update(op);
    auto [it, fresh] = written.emplace(op->buf.get(), op->index);
    if (!fresh && !equal(it->second, op->index)) {
      return fail(op->buf->name + " is written at two different elements");
    }
    IRVisitor::visit_node(op);
  }

 private:
  const std::string& var_;
};

// Rewrites the body for one vector chunk: accumulator updates go to lane
// slot `slot` of the vector accumulators; with a `pred`, accesses that move
// with the loop are predicated and masked lanes keep their partial results.
class ChunkRewriter : public IRMutator {
 public:
  ChunkRewriter(const std::string& var, const std::vector<Accumulator>& accs, Expr slot, Expr pred)
      : var_(var), accs_(accs), slot_(std::move(slot)), pred_(std::move(pred)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr and_pred(const Expr& own) const { return own.defined() ? (own && pred_) : pred_; }
  Expr visit(const Load* op, const Expr& self) override {
    Expr index = mutate(op->index);
    if (!pred_.defined() || !uses_var(op->index, var_)) {
      return index.same_as(op->index) ? self : Load::make(op->buf, index, op->predicate);
    }
    return Load::make(op->buf, index, and_pred(op->predicate));
  }
  Stmt visit(const Store* op, const Stmt& self) override {
    for (const Accumulator& a : accs_) {
      if (a.buf != op->buf) continue;
      const Binary* b = op->value.as<Binary>();
      bool self_first = b->a.as<Load>() && b->a.as<Load>()->buf == op->buf;
      Expr e = mutate(self_first ? b->b : b->a);
      Expr old = Load::make(a.vec, slot_);
      Expr v = Binary::make(b->op, old, e);
      if (pred_.defined()) v = Select::make(pred_, v, old);
      return Store::make(a.vec, slot_, v);
    }
    Expr index = mutate(op->index), value = mutate(op->value);
    Expr pred = op->predicate;
    if (pred_.defined()) pred = and_pred(pred);
    return Store::make(op->buf, index, value, pred);
  }

 private:
  const std::string& var_;
  const std::vector<Accumulator>& accs_;
  Expr slot_, pred_;
};

Expr ramp(int64_t base, int lanes) {
  return lanes == 1 ? make_int(base) : Ramp::make(make_int(base), make_int(1), lanes);
}

// The vectorized loop, or an undefined Stmt with *why_not set.
Stmt vectorize_loop(const For* f, const std::string& var, int lanes, int k, std::string* why_not) {
  runtime::fault_point("vectorize_reduction");
  Analysis an(var);
  an.visit(f->body);
  for (const Load* l : an.loads) {
    if (!an.why_not.empty()) break;
    auto it = an.written.find(l->buf.get());
    if (it != an.written.end() && !equal(it->second, l->index)) {
      an.fail(l->buf->name + " is read at another element than the one written");
    }
    for (const Accumulator& a : an.accs) {
      if (a.buf == l->buf) an.fail("accumulator " + a.buf->name + " is read outside its update");
    }
  }
  if (!an.why_not.empty()) {
    *why_not = an.why_not;
    return Stmt();
  }
  for (Accumulator& a : an.accs) a.vec = make_buf(a.buf->name + "_v", a.buf->dtype);

  const int64_t group = int64_t(lanes) * k;
  Expr r_o = Var::make(i64_t(), var + "_o"), r_t = Var::make(i64_t(), var + "_t");
  const std::string lane_name = var + "_v";
  Expr r_v = Var::make(i64_t(), lane_name);
  // A negative extent runs nothing, like the loop (the tail must not run either).
  Expr extent = simplify(max(f->extent, make_int(0)));
  Expr extent_var;
  if (!is_const(extent)) {
    extent_var = Var::make(i64_t(), var + "_n");
    std::swap(extent, extent_var);
  }
  Expr full = simplify(extent / make_int(group));
  Expr start = simplify(f->min + full * make_int(group));

  // Main loop: k independent vector chunks per iteration, no predicates.
  std::vector<Stmt> chunks;
  for (int u = 0; u < k; ++u) {
    ChunkRewriter rw(var, an.accs, make_int(int64_t(u) * lanes) + r_v, Expr());
    Stmt body = substitute(rw.mutate(f->body), var,
                           f->min + r_o * make_int(group) + make_int(int64_t(u) * lanes) + r_v);
    chunks.push_back(schedule_detail::vectorize_body(body, lane_name, make_int(0), lanes, why_not));
    if (!why_not->empty()) return Stmt();
  }
  Stmt main = For::make(r_o, make_int(0), full, ForKind::Serial, Block::make(chunks));

  // Tail: the rest in chunks of `lanes`, the last one partial.
  Expr var_expr = Var::make(i64_t(), var);
  ChunkRewriter tail_rw(var, an.accs, r_v, var_expr < f->min + extent);
  Stmt tail_body = substitute(tail_rw.mutate(f->body), var, start + r_t * make_int(lanes) + r_v);
  Expr rest = simplify((extent - full * make_int(group) + make_int(lanes - 1)) / make_int(lanes));
  Stmt tail_lanes =
      schedule_detail::vectorize_body(tail_body, lane_name, make_int(0), lanes, why_not);
  if (!why_not->empty()) return Stmt();
  Stmt tail = For::make(r_t, make_int(0), rest, ForKind::Serial, tail_lanes);

  std::vector<Stmt> init, fold;
  for (const Accumulator& a : an.accs) {
    VType t{a.buf->dtype, 1};
    Expr identity = a.op == BinOp::Add   ? make_zero(t)
                    : a.op == BinOp::Mul ? make_one(t)
                                         : Load::make(a.buf, a.index);  // idempotent ops
    for (int u = 0; u < k; ++u) {
      init.push_back(Store::make(a.vec, ramp(int64_t(u) * lanes, lanes),
                                 lanes == 1 ? identity : Broadcast::make(identity, lanes)));
    }
    auto fold_into = [&](int64_t dst, int64_t src, int w) {
      fold.push_back(Store::make(
          a.vec, ramp(dst, w),
          Binary::make(a.op, Load::make(a.vec, ramp(dst, w)), Load::make(a.vec, ramp(src, w)))));
    };
    for (int u = 1; u < k; ++u) fold_into(0, int64_t(u) * lanes, lanes);
    int w = lanes;
    while (w > 1 && w % 2 == 0) {
      w /= 2;
      fold_into(0, w, w);
    }
    for (int l = 0; l < w; ++l) {
      fold.push_back(Store::make(
          a.buf, a.index,
          Binary::make(a.op, Load::make(a.buf, a.index), Load::make(a.vec, make_int(l)))));
    }
  }
  Stmt out = Block::make({Block::make(init), main, tail, Block::make(fold)});
  for (const Accumulator& a : an.accs) {
    out = Allocate::make(a.vec, make_int(group), MemoryScope::Stack, out);
  }
  return extent_var.defined() ? LetStmt::make(extent, extent_var, out) : out;
}

// vectorize_reduction without simplification; its argument checks come first.
Stmt vectorize_reduction_loop(const Stmt& s, const std::string& loop_var, int lanes,
                              int accumulators, std::string* why_not) {
  if (lanes < 1 || lanes > 64 || accumulators < 1 || accumulators > 16) {
    *why_not = "vectorize_reduction: loop '" + loop_var +
               "': lanes must be in [1, 64] and accumulators in [1, 16], got " +
               std::to_string(lanes) + " and " + std::to_string(accumulators);
    return Stmt();
  }
  return schedule_detail::rewrite_loop(
      s, loop_var, "vectorize_reduction",
      [&](const For* f, std::string* why) {
        return vectorize_loop(f, loop_var, lanes, accumulators, why);
      },
      why_not);
}

}  // namespace

std::optional<std::string> why_not_vectorize_reduction(const Stmt& s, const std::string& loop_var,
                                                       int lanes, int accumulators) {
  std::string why_not;
  vectorize_reduction_loop(s, loop_var, lanes, accumulators, &why_not);
  return schedule_detail::reason(why_not);
}

Stmt vectorize_reduction(const Stmt& s, const std::string& loop_var, int lanes, int accumulators) {
  std::string why_not;
  Stmt out = vectorize_reduction_loop(s, loop_var, lanes, accumulators, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return simplify(out);
}

}  // namespace kiln::passes
