// Shared pieces of the GPU schedules (gpu_map.cpp, gpu_pointwise.cpp,
// gpu_reduce.cpp, gpu_rows.cpp): what variables an expression reads, fresh
// names, whether a kernel is mapped already, and the row program that
// gpu_reduce builds its phases from. Internal to passes/schedule.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"
#include "passes/schedule/gpu_schedule.h"

namespace kiln::passes::gpu_detail {

// The names of the variables `e` / `s` reads or binds.
std::set<std::string> vars_of(const loop::Expr& e);
std::set<std::string> names_in(const loop::Stmt& s);

// Whether `s` holds GPU loops (a kernel mapped before: left alone).
bool is_mapped(const loop::Stmt& s);

// The top-level statements of a kernel body, one after another.
std::vector<loop::Stmt> top_level(const loop::Stmt& body);

// Names not yet used in a kernel: fresh("i0_c") is "i0_c", or "i0_c1", ... when
// taken (by a variable, a buffer or an earlier fresh name).
class Names {
 public:
  explicit Names(const loop::Kernel& k);
  std::string fresh(const std::string& base);

 private:
  std::set<std::string> used_;
};

// The identity of a reduction operator for `t` (0 for +, 1 for *, the
// dtype's lowest value for max, ...), the value each thread's partial starts
// from.
loop::Expr reduction_identity(loop::BinOp op, loop::VType t);

// ----------------------------------------------------------------------------- row programs

// A statement of a row's body, in program order (gpu_rows.cpp).
struct RowItem {
  enum Kind { Scalar, Pointwise, Reduction } kind = Scalar;
  // Scalar: the statement. Pointwise and Reduction: the body of the loop over
  // the row, in terms of the program's element variable (`RowProgram::c`).
  loop::Stmt stmt;
  loop::Expr extent;       // loops: the element count (they start at 0)
  bool lane0 = false;      // Scalar: writes kernel memory, so one thread of the team runs it
  bool flattened = false;  // a nest of reduction loops run as one loop over all of them
  struct Accumulator {
    loop::Buf buf;  // a row-level local
    int64_t index = 0;
    loop::BinOp op = loop::BinOp::Add;
  };
  std::vector<Accumulator> accs;  // Reduction: what the loop accumulates into
};

// One row's work as a list of items over per-row locals: what gpu_reduce
// needs to run a row on a team of threads. Built from a kernel that is one or
// more loops over the same rows (or no row loop at all: the whole tensor is
// one row).
struct RowProgram {
  std::string row;  // the row variable ("" when there is no row loop)
  loop::Expr rows;  // the row count (the row loops' extent)
  // Nested loops over rows (a normalization of [B, T, C] over C) run as one
  // loop over all rows; their variables are bound from the row's number,
  // outermost first, before the row's statements.
  std::vector<std::pair<loop::Expr, loop::Expr>> row_lets;
  std::string c;                   // the element variable every row loop is written in
  std::vector<loop::Stmt> locals;  // Allocates (body unused) of per-row scratch, as lowered
  std::vector<RowItem> items;
  // Memory along the rows is contiguous in the row variable rather than
  // along each row (a reduction over an outer dim): threads of a team then
  // take adjacent rows.
  bool columns = false;
};

// The row program of `k`, or std::nullopt with *why_not set when the kernel
// does not have that form or a row's elements could not be shared among
// threads safely (gpu_rows.cpp says which forms and why).
std::optional<RowProgram> row_program(const loop::Kernel& k, Names& names, std::string* why_not);

}  // namespace kiln::passes::gpu_detail
