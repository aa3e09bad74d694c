// parallelize: marks one loop ForKind::Parallel; the backend outlines its body
// onto the thread pool. Assumes iterations are independent (lowered kernels
// write disjoint output elements per iteration of an outer loop).
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"
#include "passes/schedule/schedule_internal.h"

namespace kiln::passes {

namespace schedule_detail {

namespace {
class LoopRewriter : public loop::IRMutator {
 public:
  LoopRewriter(const std::string& name, const LoopRewrite& f, std::string* why_not, bool all)
      : name_(name), f_(f), why_not_(why_not), all_(all) {}
  bool found = false;

  // Once a rewrite failed, nothing more is rewritten (or rebuilt).
  loop::Stmt mutate(const loop::Stmt& s) override {
    return failed() ? s : loop::IRMutator::mutate(s);
  }
  using loop::IRMutator::mutate;

 protected:
  using loop::IRMutator::visit;
  loop::Stmt visit(const loop::For* op, const loop::Stmt& self) override {
    if ((all_ || !found) && op->var.as<loop::Var>()->name == name_) {
      found = true;
      loop::Stmt out = f_(op, why_not_);
      return failed() ? self : out;
    }
    return loop::IRMutator::visit(op, self);
  }

 private:
  bool failed() const { return !why_not_->empty(); }
  const std::string& name_;
  const LoopRewrite& f_;
  std::string* why_not_;
  bool all_;
};
}  // namespace

loop::Stmt rewrite_loop(const loop::Stmt& s, const std::string& loop_var, const char* what,
                        const LoopRewrite& f, std::string* why_not, bool all) {
  why_not->clear();
  LoopRewriter r(loop_var, f, why_not, all);
  loop::Stmt out = r.mutate(s);
  if (why_not->empty() && !r.found) {
    *why_not = std::string(what) + ": no loop named '" + loop_var + "'";
  }
  return why_not->empty() ? out : loop::Stmt();
}

}  // namespace schedule_detail

namespace {

loop::Stmt parallelize_loop(const loop::Stmt& s, const std::string& loop_var,
                            std::string* why_not) {
  return schedule_detail::rewrite_loop(
      s, loop_var, "parallelize",
      [](const loop::For* f, std::string*) {
        return loop::For::make(f->var, f->min, f->extent, loop::ForKind::Parallel, f->body);
      },
      why_not);
}

}  // namespace

std::optional<std::string> why_not_parallelize(const loop::Stmt& s, const std::string& loop_var) {
  std::string why_not;
  parallelize_loop(s, loop_var, &why_not);
  return schedule_detail::reason(why_not);
}

loop::Stmt parallelize(const loop::Stmt& s, const std::string& loop_var) {
  std::string why_not;
  loop::Stmt out = parallelize_loop(s, loop_var, &why_not);
  KILN_USER_CHECK(why_not.empty(), why_not);
  return out;
}

}  // namespace kiln::passes
