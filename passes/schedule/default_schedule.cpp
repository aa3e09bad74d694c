// default_schedule: the schedule a lowered kernel gets unless a tuned one
// replaces it. Elementwise/layout nests: innermost loop split by the vector
// width (predicated tail) and vectorized, outermost loop parallel.
// Reductions/contractions: outermost loop parallel (its iterations write
// disjoint outputs). A nest a transform does not fit keeps its loops; the
// result computes the same values. Transforms simplify as they go, which folds
// loops of extent 1 and drops loops of extent <= 0 (a 1-D nest no longer than
// the vector width is one chunk), so the loop to parallelize is looked up in
// the transformed nest, never assumed.
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;  // NOLINT

namespace {

// The loop variables of a perfect nest starting at `s`, outermost first.
std::vector<std::string> nest_vars(const Stmt& s) {
  std::vector<std::string> vars;
  for (const For* f = s.as<For>(); f; f = f->body.as<For>()) vars.push_back(f->var.as<Var>()->name);
  return vars;
}

// Whether `s` still contains a loop over variable `name`.
bool has_loop(const Stmt& s, const std::string& name) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    const std::string& name;
    bool found = false;
    explicit Finder(const std::string& n) : name(n) {}
    void visit_node(const For* op) override {
      if (op->var.as<Var>()->name == name) found = true;
      if (!found) IRVisitor::visit_node(op);
    }
  } finder(name);
  finder.visit(s);
  return finder.found;
}

Stmt schedule_nest(const Stmt& nest, ir::OpCategory category, const ScheduleTarget& t) {
  std::vector<std::string> vars = nest_vars(nest);
  if (vars.empty()) return nest;
  Stmt s = nest;
  const bool pointwise =
      category == ir::OpCategory::Elementwise || category == ir::OpCategory::Layout;
  std::string outer = vars.front();
  if (pointwise && t.vector_width > 1) {
    const std::string& inner = vars.back();
    try {
      Stmt split_nest =
          split(s, inner, t.vector_width, inner + "_o", inner + "_v", TailStrategy::Predicate);
      s = vectorize(split_nest, inner + "_v");
      if (vars.size() == 1) outer = inner + "_o";
    } catch (const Error&) {
      // Not vectorizable (e.g. a scalar store of lane values): keep the scalar nest.
    }
  }
  if (t.parallel) {
    // The intended loop may have been folded away by the split (one chunk) or
    // by an extent-1 outer dim: then the outermost loop left runs parallel (any
    // loop of a pointwise nest writes disjoint elements per iteration), and a
    // nest with no loop left runs serially.
    if (!has_loop(s, outer)) {
      std::vector<std::string> left = nest_vars(s);
      outer = left.empty() ? std::string() : left.front();
    }
    if (!outer.empty()) s = parallelize(s, outer);
  }
  return s;
}

}  // namespace

Kernel default_schedule(const Kernel& k, ir::OpCategory category, const ScheduleTarget& target) {
  Kernel out = k;
  if (!k.body.defined()) return out;
  std::vector<Stmt> parts;
  if (const Block* b = k.body.as<Block>()) {
    parts = b->stmts;
  } else {
    parts = {k.body};
  }
  for (Stmt& p : parts) p = schedule_nest(p, category, target);
  out.body = simplify(Block::make(parts));
  return out;
}

}  // namespace kiln::passes
