// Traversal of loop IR. IRVisitor walks every node (override the kinds you care
// about and call the base to keep walking); IRMutator rebuilds a node only when
// one of its children changed and otherwise returns the very same handle.
// Dispatch for every kind is generated from nodes.def.
#pragma once

#include "ir/loop/canonical.h"  // equal() and structural_hash(), which passes reach through here
#include "ir/loop/loop_ir.h"

namespace kiln::loop {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit(const Expr& e);
  void visit(const Stmt& s);

 protected:
#define KILN_EXPR_NODE(Name) virtual void visit_node(const Name* op);
#define KILN_STMT_NODE(Name) virtual void visit_node(const Name* op);
#include "ir/loop/nodes.def"
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define KILN_EXPR_NODE(Name) virtual Expr visit(const Name* op, const Expr& self);
#define KILN_STMT_NODE(Name) virtual Stmt visit(const Name* op, const Stmt& self);
#include "ir/loop/nodes.def"
};

// Replaces Vars by name (capture-naive: callers use fresh names).
Expr substitute(const Expr& e, const std::string& var, const Expr& replacement);
Stmt substitute(const Stmt& s, const std::string& var, const Expr& replacement);

// Text form, for dumps and tests:
//   for (i, 0, n) parallel {
//     y[i] = (x[i] * 2.0f)
//   }
std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const Kernel& k);

}  // namespace kiln::loop
