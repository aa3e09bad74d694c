// Loop-IR verifier: the rules of a whole kernel. What each node's make()
// validates (operand types and lanes, a Store's value of the buffer's dtype,
// predicates with the index's lanes, scalar i64 loop bounds, constant extents
// of Vectorized loops, ...) holds for every node and is not checked again.
// These depend on where a node stands:
//
// signature
//   kernel-signature          the kernel has a name, its buffers are defined and
//                             its scalars are scalar Vars
//   extern-call-argument      ExternCall arguments are scalars (a C routine takes
//                             them by value)
// scope (the backends keep one binding per name and per buffer)
//   unbound-variable          every Var read is a kernel scalar or bound by an
//                             enclosing For, Let or LetStmt
//   variable-type             and has the type of that binding
//   rebound-variable          a For, Let or LetStmt does not bind a name already
//                             bound where it stands: schedules find loops by name
//   unbound-buffer            every buffer loaded, stored or passed to an
//                             ExternCall is a kernel buffer or allocated by an
//                             enclosing Allocate
//   rebound-buffer            an Allocate does not allocate a kernel buffer or a
//                             buffer allocated around it
//   buffer-name               no two buffers in scope at once (parameters and
//                             enclosing Allocates) share a name
// loop nesting (GPU-mapped loop IR stays a valid serial program)
//   gpu-thread-outside-block  a GpuThread loop is inside a GpuBlock loop
//   gpu-block-inside-thread   a GpuBlock loop is not inside a GpuThread loop
//   parallel-and-gpu          Parallel loops (the CPU thread pool) and GPU loops
//                             do not nest in each other
//   barrier-placement         a Barrier is inside a GpuBlock loop and not inside
//                             a GpuThread loop: each barrier phase is its own
//                             thread loop
//   shared-memory-placement   a GpuShared Allocate is inside a GpuBlock loop and
//                             not inside a GpuThread loop (one per block)
//   gpu-local-placement       a GpuLocal Allocate is inside a GpuBlock loop and
//                             not inside a GpuThread loop (per-thread storage
//                             that outlives one barrier phase)
//   gpu-local-access          a GpuLocal buffer is loaded and stored only inside
//                             a GpuThread loop (each thread has its own copy)
//   warp-reduce               a warp_reduce_<op> call (ir/loop/warp.h) is scalar,
//                             inside a GpuThread loop, reduces a load of a GpuLocal
//                             buffer (no predicate) and has a constant power-of-two
//                             width of at most 32
//
// Allowed on purpose: a Parallel loop inside a Parallel loop (the LLVM backend
// outlines both, and the runtime runs a nested parallel_for serially on the
// calling thread); a Vectorized loop left after scheduling (emitted as a
// serial loop with a vectorize hint); a name (of a variable or a buffer)
// bound again by sibling scopes.
//
// All problems are collected and thrown together as one kiln::Error, like the
// graph verifier (ir/verifier.cpp) does.
#include "ir/loop/verifier.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/loop/visitor.h"
#include "ir/loop/warp.h"
#include "kiln/error.h"

namespace kiln::loop {

namespace {

// Problems past this many are counted, not listed: one broken binding
// usually breaks every use after it.
constexpr size_t kMaxListed = 20;
constexpr size_t kMaxNodeText = 160;

std::string clip(std::string s) {
  if (s.size() > kMaxNodeText) s = s.substr(0, kMaxNodeText - 3) + "...";
  return s;
}

// A statement as its first printed line ("for (i, 0, n) parallel { ..."):
// the rest is its body, which has its own lines in the dump.
std::string stmt_text(const Stmt& s) {
  std::string t = to_string(s);
  size_t start = t.find_first_not_of(' ');
  size_t nl = t.find('\n');
  std::string first = t.substr(start == std::string::npos ? 0 : start,
                               nl == std::string::npos ? std::string::npos : nl - start);
  if (nl != std::string::npos && nl + 1 < t.size()) first += " ...";
  return clip(first);
}

class Checker : public IRVisitor {
 public:
  explicit Checker(const Kernel& k) : kernel_(k) {}

  // The problems, one per line ("" when there are none).
  std::string run() {
    if (kernel_.name.empty()) top_problem("kernel-signature", "the kernel has no name");
    for (size_t i = 0; i < kernel_.buffers.size(); ++i) {
      const Buf& b = kernel_.buffers[i];
      if (!b) {
        top_problem("kernel-signature", "buffer parameter " + std::to_string(i) + " is null");
        continue;
      }
      if (!live_bufs_.insert(b.get()).second) {
        top_problem("kernel-signature", "buffer '" + b->name + "' is a parameter twice");
      }
      declare_name(b, "parameter");
    }
    for (size_t i = 0; i < kernel_.scalars.size(); ++i) {
      const Expr& s = kernel_.scalars[i];
      const Var* v = s.as<Var>();
      if (!v || s.type().lanes != 1) {
        top_problem("kernel-signature", "scalar parameter " + std::to_string(i) + " (" +
                                            (s.defined() ? clip(to_string(s)) : "undefined") +
                                            ") is not a scalar Var");
        continue;
      }
      if (!vars_.emplace(v->name, s.type()).second) {
        top_problem("rebound-variable", "scalar parameter '" + v->name + "' is listed twice");
      }
    }
    visit(kernel_.body);
    std::string text;
    for (const std::string& p : problems_) text += "\n  " + p;
    if (unlisted_) text += "\n  ... and " + std::to_string(unlisted_) + " more";
    return text;
  }

 protected:
  using IRVisitor::visit;

  void visit_node(const Var* op) override {
    auto it = vars_.find(op->name);
    if (it == vars_.end()) {
      expr_problem("unbound-variable",
                   "'" + op->name +
                       "' is read but is no kernel scalar and no enclosing "
                       "For, Let or LetStmt binds it",
                   op);
    } else if (!(it->second == op->type)) {
      expr_problem(
          "variable-type",
          "'" + op->name + "' is read as " + op->type.str() + " but bound as " + it->second.str(),
          op);
    }
  }

  void visit_node(const Load* op) override {
    check_buffer_use(op->buf, "loaded", op);
    IRVisitor::visit_node(op);
  }

  void visit_node(const Let* op) override {
    visit(op->value);  // the binding is not in scope in its own value
    std::optional<VType> outer = bind(op->var, [&] { return clip(to_string(Expr(op))); });
    visit(op->body);
    unbind(op->var, outer);
  }

  void visit_node(const For* op) override {
    Where here(this, op);
    visit(op->min);
    visit(op->extent);
    check_loop_nesting(op->for_kind);
    std::optional<VType> outer = bind(op->var, [&] { return stmt_text(op); });
    int* depth = op->for_kind == ForKind::Parallel    ? &parallel_
                 : op->for_kind == ForKind::GpuBlock  ? &gpu_block_
                 : op->for_kind == ForKind::GpuThread ? &gpu_thread_
                                                      : nullptr;
    if (depth) ++*depth;
    visit(op->body);
    if (depth) --*depth;
    unbind(op->var, outer);
  }

  void visit_node(const Store* op) override {
    Where here(this, op);
    check_buffer_use(op->buf, "stored to", nullptr);
    IRVisitor::visit_node(op);
  }

  void visit_node(const Allocate* op) override {
    Where here(this, op);
    visit(op->size);
    if (op->scope == MemoryScope::GpuShared && (gpu_block_ == 0 || gpu_thread_ > 0)) {
      stmt_problem(
          "shared-memory-placement",
          "'" + op->buf->name + "' is allocated in GPU shared memory " +
              (gpu_block_ == 0 ? "outside any gpu_block loop" : "inside a gpu_thread loop"));
    }
    if (op->scope == MemoryScope::GpuLocal && (gpu_block_ == 0 || gpu_thread_ > 0)) {
      stmt_problem("gpu-local-placement",
                   "'" + op->buf->name + "' is allocated in GPU per-thread storage " +
                       (gpu_block_ == 0 ? "outside any gpu_block loop"
                                        : "inside a gpu_thread loop (use stack scratch there)"));
    }
    bool fresh = live_bufs_.insert(op->buf.get()).second;
    if (!fresh) {
      bool param = false;
      for (const Buf& b : kernel_.buffers) param |= b.get() == op->buf.get();
      stmt_problem("rebound-buffer", "'" + op->buf->name + "' is " +
                                         (param ? "a kernel buffer" : "already allocated here"));
      visit(op->body);
      return;
    }
    const BufferNode* hidden = declare_name(op->buf, "scratch buffer");
    if (op->scope == MemoryScope::GpuLocal) gpu_local_.insert(op->buf.get());
    visit(op->body);
    gpu_local_.erase(op->buf.get());
    live_bufs_.erase(op->buf.get());
    if (hidden) {
      live_names_[op->buf->name] = hidden;
    } else {
      live_names_.erase(op->buf->name);
    }
  }

  void visit_node(const IfThenElse* op) override {
    {
      Where here(this, op);
      visit(op->cond);
    }
    visit(op->then_case);
    visit(op->else_case);
  }

  void visit_node(const LetStmt* op) override {
    Where here(this, op);
    visit(op->value);
    std::optional<VType> outer = bind(op->var, [&] { return stmt_text(op); });
    visit(op->body);
    unbind(op->var, outer);
  }

  void visit_node(const Call* op) override {
    if (warp_reduce_op(op->name)) {
      const Load* l = op->args.size() == 2 ? op->args[0].as<Load>() : nullptr;
      int64_t w = 0;
      std::string bad;
      if (op->type.lanes != 1) {
        bad = "is a vector";
      } else if (gpu_thread_ == 0) {
        bad = "is outside any gpu_thread loop";
      } else if (!l || l->predicate.defined() || !gpu_local_.count(l->buf.get())) {
        bad = "does not reduce an unpredicated load of a GPU per-thread (gpu_local) buffer";
      } else if (!is_const_int(op->args[1], &w) || w < 1 || w > 32 || (w & (w - 1)) != 0) {
        bad = "has a width that is not a constant power of two up to 32";
      }
      if (!bad.empty()) expr_problem("warp-reduce", "'" + op->name + "' " + bad, op);
    }
    IRVisitor::visit_node(op);
  }

  void visit_node(const Barrier* op) override {
    Where here(this, op);
    if (gpu_block_ == 0 || gpu_thread_ > 0) {
      stmt_problem("barrier-placement", gpu_block_ == 0 ? "a barrier outside any gpu_block loop"
                                                        : "a barrier inside a gpu_thread loop "
                                                          "(each barrier phase is its own "
                                                          "thread loop)");
    }
  }

  void visit_node(const ExternCall* op) override {
    Where here(this, op);
    for (const Buf& b : op->bufs) check_buffer_use(b, "passed to '" + op->name + "'", nullptr);
    for (size_t i = 0; i < op->args.size(); ++i) {
      if (op->args[i].type().lanes != 1) {
        stmt_problem("extern-call-argument", "argument " + std::to_string(i) + " of '" + op->name +
                                                 "' is a vector (" + op->args[i].type().str() +
                                                 "); routines take scalars");
      }
    }
    IRVisitor::visit_node(op);
  }

 private:
  // The innermost statement being checked, named in messages about its
  // expressions; restored on scope exit.
  class Where {
   public:
    Where(Checker* c, const StmtNode* s) : c_(c), saved_(c->where_) { c->where_ = s; }
    ~Where() { c_->where_ = saved_; }

   private:
    Checker* c_;
    Stmt saved_;
  };

  // Binds `var` for a body; returns the outer binding of its name, if any,
  // which is a problem (and is restored by unbind).
  template <typename NodeText>
  std::optional<VType> bind(const Expr& var, NodeText node_text) {
    const std::string& name = var.as<Var>()->name;
    std::optional<VType> outer;
    if (auto it = vars_.find(name); it != vars_.end()) {
      outer = it->second;
      add("rebound-variable", "'" + name + "' is bound again inside its own scope", node_text());
    }
    vars_[name] = var.type();
    return outer;
  }
  void unbind(const Expr& var, const std::optional<VType>& outer) {
    const std::string& name = var.as<Var>()->name;
    if (outer) {
      vars_[name] = *outer;
    } else {
      vars_.erase(name);
    }
  }

  void check_loop_nesting(ForKind kind) {
    bool gpu = kind == ForKind::GpuBlock || kind == ForKind::GpuThread;
    if (kind == ForKind::GpuThread && gpu_block_ == 0) {
      stmt_problem("gpu-thread-outside-block", "a gpu_thread loop outside any gpu_block loop");
    }
    if (kind == ForKind::GpuBlock && gpu_thread_ > 0) {
      stmt_problem("gpu-block-inside-thread", "a gpu_block loop inside a gpu_thread loop");
    }
    if (gpu && parallel_ > 0) {
      stmt_problem("parallel-and-gpu",
                   std::string("a ") + for_kind_name(kind) + " loop inside a parallel loop");
    }
    if (kind == ForKind::Parallel && (gpu_block_ > 0 || gpu_thread_ > 0)) {
      stmt_problem("parallel-and-gpu", "a parallel loop inside a GPU loop");
    }
  }

  void check_buffer_use(const Buf& b, const std::string& how, const ExprNode* at) {
    if (gpu_local_.count(b.get()) && gpu_thread_ == 0) {
      std::string what = "GPU per-thread buffer '" + b->name + "' is " + how +
                         " outside any gpu_thread loop (whose copy would it be?)";
      if (at) {
        expr_problem("gpu-local-access", what, at);
      } else {
        stmt_problem("gpu-local-access", what);
      }
    }
    if (live_bufs_.count(b.get())) return;
    std::string what = "'" + b->name + "' is " + how +
                       " but is no kernel buffer and no enclosing Allocate allocates it";
    if (at) {
      expr_problem("unbound-buffer", what, at);
    } else {
      stmt_problem("unbound-buffer", what);
    }
  }

  // Puts `b`'s name in scope; returns the buffer of that name it hides (a
  // problem), if any. Sibling scopes may reuse a name: schedules that version
  // a loop nest make one scratch buffer per version.
  const BufferNode* declare_name(const Buf& b, const char* what) {
    auto it = live_names_.find(b->name);
    const BufferNode* hidden = it == live_names_.end() ? nullptr : it->second;
    if (hidden && hidden != b.get()) {
      std::string msg =
          std::string(what) + " '" + b->name + "' has the name of another buffer in scope";
      if (where_.defined()) {
        stmt_problem("buffer-name", msg);
      } else {
        top_problem("buffer-name", msg);
      }
    }
    live_names_[b->name] = b.get();
    return hidden;
  }

  // Only the listed problems are printed (printing is the costly part).
  void add(const char* rule, const std::string& what, const std::string& at) {
    if (problems_.size() >= kMaxListed) return uncounted();
    std::string p = std::string(rule) + ": " + what + "\n    at: " + at;
    if (where_.defined() && stmt_text(where_) != at) p += "\n    in: " + stmt_text(where_);
    problems_.push_back(std::move(p));
  }
  void expr_problem(const char* rule, const std::string& what, const ExprNode* at) {
    if (problems_.size() >= kMaxListed) return uncounted();
    add(rule, what, clip(to_string(Expr(at))));
  }
  void stmt_problem(const char* rule, const std::string& what) {
    if (problems_.size() >= kMaxListed) return uncounted();
    add(rule, what, stmt_text(where_));
  }
  void top_problem(const char* rule, const std::string& what) {
    if (problems_.size() >= kMaxListed) return uncounted();
    problems_.push_back(std::string(rule) + ": " + what);
  }
  void uncounted() { ++unlisted_; }

  const Kernel& kernel_;
  std::vector<std::string> problems_;                              // the first kMaxListed
  size_t unlisted_ = 0;                                            // and how many more
  std::unordered_map<std::string, VType> vars_;                    // in scope: name -> type
  std::unordered_set<const BufferNode*> live_bufs_;                // in scope
  std::unordered_set<const BufferNode*> gpu_local_;                // in scope, GpuLocal
  std::unordered_map<std::string, const BufferNode*> live_names_;  // in scope, by name
  int parallel_ = 0, gpu_block_ = 0, gpu_thread_ = 0;              // enclosing loops of these kinds
  Stmt where_;
};

}  // namespace

void verify_kernel(const Kernel& k) {
  std::string problems = Checker(k).run();
  if (!problems.empty()) throw Error("verify: loop kernel '" + k.name + "' is invalid:" + problems);
}

}  // namespace kiln::loop
