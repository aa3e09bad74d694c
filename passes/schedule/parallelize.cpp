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
  LoopRewriter(const std::string& name, const std::function<loop::Stmt(const loop::For*)>& f,
               bool all)
      : name_(name), f_(f), all_(all) {}
  bool found = false;

 protected:
  using loop::IRMutator::visit;
  loop::Stmt visit(const loop::For* op, const loop::Stmt& self) override {
    if ((all_ || !found) && op->var.as<loop::Var>()->name == name_) {
      found = true;
      return f_(op);
    }
    return loop::IRMutator::visit(op, self);
  }

 private:
  const std::string& name_;
  const std::function<loop::Stmt(const loop::For*)>& f_;
  bool all_;
};
}  // namespace

loop::Stmt rewrite_loop(const loop::Stmt& s, const std::string& loop_var, const char* what,
                        const std::function<loop::Stmt(const loop::For*)>& f, bool all) {
  LoopRewriter r(loop_var, f, all);
  loop::Stmt out = r.mutate(s);
  KILN_USER_CHECK(r.found, what << ": no loop named '" << loop_var << "'");
  return out;
}

}  // namespace schedule_detail

loop::Stmt parallelize(const loop::Stmt& s, const std::string& loop_var) {
  return schedule_detail::rewrite_loop(s, loop_var, "parallelize", [](const loop::For* f) {
    return loop::For::make(f->var, f->min, f->extent, loop::ForKind::Parallel, f->body);
  });
}

}  // namespace kiln::passes
