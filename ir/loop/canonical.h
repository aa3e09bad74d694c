// What makes two pieces of loop IR "the same": structural equality, a hash
// consistent with it, and the canonical byte form of kernels that the kernel
// cache keys on. All three come from the field lists in fields.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/loop/loop_ir.h"

namespace kiln::loop {

// Structural equality: same kinds, types, operators, constants (floats by bit
// pattern, so -0.0 != 0.0 and NaN payloads differ), Var names, and Bufs by
// identity (two buffers that share a name are different buffers).
bool equal(const Expr& a, const Expr& b);
bool equal(const Stmt& a, const Stmt& b);

// Consistent with equal(): equal trees hash alike. Stable across runs and
// processes (no pointer values).
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);

// A kernel as bytes, such that two kernels give equal bytes exactly when they
// are structurally equal up to the identity of their buffers: the name, the
// parameters and every field of every node, with buffers numbered by first
// appearance (parameters first) and each one's name and dtype written once.
// Independent of pointer values and of the printer. The format, per node:
// its kind byte (0xff for an absent child), for an expression its dtype byte
// and lane count, then its fields in Fields<> order: integers and counts as 8
// bytes in host order, floats as their bit pattern, strings and lists with
// their length first, enums as one byte; a buffer as a tag (0 absent, 1 first
// use, 2 later use), its number, and on first use its name and dtype.
std::string canonical_bytes(const Kernel& k);
// A kernel's code as bytes: canonical_bytes without the names that do not
// change what it computes (the kernel's, each buffer's) and with every Var
// name replaced by its number in order of first appearance (a consistent
// renaming). Two kernels with equal code bytes compile to the same machine
// code up to the entry's name: what compile() deduplicates kernels by.
std::string canonical_code_bytes(const Kernel& k);
// The kernels one after another (each numbers its own buffers).
std::string canonical_bytes(const std::vector<Kernel>& kernels);

}  // namespace kiln::loop
