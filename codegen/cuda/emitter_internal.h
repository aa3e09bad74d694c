// What the CUDA emitter's two halves share: the per-kernel emitter state
// (names in scope, buffers, the output) and its expression printer
// (emit_expr.cpp) and statement printer (cuda_emitter.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/loop/loop_ir.h"

namespace kiln::codegen::cuda {

// The C type of a value of `t` in a register (f16/bf16 live as float).
const char* register_type(DType t);
// The C type of an element of `t` in memory (kiln_f16, kiln_u8 for bool).
const char* memory_type(DType t);

// Whether `e` reads memory.
bool contains_load(const loop::Expr& e);
// `s` without one pair of parentheses around all of it, if it has them
// (where the text stands alone: a condition, a subscript, an initializer).
std::string unparen(const std::string& s);

// Identifiers handed out within one scope of names (a kernel's locals, or a
// program's kernels): valid C, unique, never reserved.
class NameTable {
 public:
  // `wanted` made an identifier ('.' and other characters to '_', a leading
  // digit prefixed), suffixed `_2`, `_3`, ... until it is free; then taken.
  std::string fresh(const std::string& wanted);

 private:
  std::set<std::string> taken_;
};

// A value being printed: one C expression per lane (a scalar has one).
struct Value {
  std::vector<std::string> lanes;
  // Computed from tensor data (a load, a float, a data variable): integer
  // arithmetic on it must wrap explicitly. Index arithmetic (loop variables,
  // i64 parameters, constants) cannot overflow without an out-of-bounds
  // access, so it stays plain C.
  bool data = false;
  // For integer constants that fit in int: their digits without a type
  // (per lane, or one for all), which C's arithmetic conversions give the
  // other operand's type. Empty otherwise.
  std::vector<std::string> bare;

  const std::string& lane(int k) const { return lanes[lanes.size() == 1 ? 0 : size_t(k)]; }
  bool has_bare() const { return !bare.empty(); }
  const std::string& bare_lane(int k) const { return bare[bare.size() == 1 ? 0 : size_t(k)]; }
};

class KernelEmitter {
 public:
  KernelEmitter(const loop::Kernel& k, std::string symbol) : k_(k), symbol_(std::move(symbol)) {}

  // The kernel's text, and its threads per block (0 when not constant).
  std::string emit(int64_t* block);

  // ---- expressions (emit_expr.cpp)
  Value emit(const loop::Expr& e);
  std::string scalar(const loop::Expr& e);  // a one-lane value's text

 private:
  struct BufInfo {
    std::string name;  // C identifier
    DType dtype;
    // Whether lanes may move as one kiln_vload/kiln_vstore: kernel buffers
    // and shared memory; a local array would lose its registers to it.
    bool vector_access = true;
  };
  struct VarInfo {
    std::string name;  // C identifier of a scalar, or of a kiln_vec for lanes > 1
    int lanes = 1;
    bool data = false;
    std::string slot;  // a non-i64 scalar parameter: the 64-bit slot it arrives in
  };

  // ---- expressions
  Value binary(const loop::Binary* op);
  Value compare(const loop::Compare* op);
  Value cast(const loop::Cast* op);
  Value load(const loop::Load* op);
  Value ramp(const loop::Ramp* op);
  Value call(const loop::Call* op);
  // warp_reduce_<op> (ir/loop/warp.h) as __shfl_xor_sync steps (emit_warp.cpp).
  Value warp_reduce(const loop::Call* op, loop::BinOp combine);
  Value literal(const loop::Expr& e);
  // `v` as an operand of a helper call or a conditional: constants typed.
  static std::string typed(const Value& v, int k) { return v.lane(k); }
  // `v` as an operand of plain C arithmetic with a non-constant partner.
  static std::string plain(const Value& v, int k) {
    return v.has_bare() ? v.bare_lane(k) : v.lane(k);
  }
  // Binds `text` (of register type `ctype`) to a fresh const local named
  // after `hint` unless it is a name or a constant already; returns the name.
  std::string bind(const std::string& ctype, const std::string& text, const std::string& hint);
  // A value's lanes as one kiln_vec local (for a store's value or a vector let).
  std::string bind_vector(DType t, const Value& v, const std::string& hint);
  // The index lanes of a dense access (Ramp of stride 1) to a buffer that
  // allows it, as its base; nullopt otherwise.
  std::optional<std::string> dense_base(const BufInfo& b, const loop::Expr& index);
  // The text of element `index` of `b` read as a register value.
  static std::string read(const BufInfo& b, const std::string& index);
  // The register value `v` as the memory type of `t`.
  static std::string to_memory(DType t, const std::string& v);
  const BufInfo& buffer(const loop::Buf& b) const;

  // ---- statements (cuda_emitter.cpp)
  void stmt(const loop::Stmt& s);
  void for_loop(const loop::For* op);
  void store(const loop::Store* op);
  void allocate(const loop::Allocate* op);
  void warp_mma(const loop::ExternCall* op);  // ir/loop/warp_mma.h
  void scalar_params();
  void line(const std::string& text);  // one line at the current indent
  // Binds IR variable `name` to a fresh C identifier for the scope of `f`.
  template <typename F>
  void with_var(const std::string& name, VarInfo info, F&& f) {
    std::optional<VarInfo> saved;
    if (auto it = vars_.find(name); it != vars_.end()) saved = it->second;
    vars_[name] = std::move(info);
    f();
    if (saved) {
      vars_[name] = *saved;
    } else {
      vars_.erase(name);
    }
  }
  [[noreturn]] void not_gpu_code(const std::string& what) const;  // kiln::Error

  const loop::Kernel& k_;
  std::string symbol_;
  NameTable names_;
  std::unordered_map<std::string, VarInfo> vars_;
  std::unordered_map<const loop::BufferNode*, BufInfo> bufs_;
  std::string out_;
  int indent_ = 1;
  bool in_block_ = false, in_thread_ = false;
  bool block_seen_ = false;
  std::optional<loop::Expr> thread_extent_;  // of the first GpuThread loop seen
};

}  // namespace kiln::codegen::cuda
