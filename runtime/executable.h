// Executable — the launch list a compiled function runs: kernel entry points,
// buffer slots, the recipes that compute each kernel's scalar arguments from
// the input shapes and strides, and a buffer plan that reuses the memory of
// dead intermediates (liveness over the launch order).
//
// It knows no compiler: kernels are function pointers (or opaque launchers,
// for evaluators), buffers are slot indices, and sizes are tiny postfix
// programs over symbolic dims. The api layer translates lowered loop IR into
// this form. run() keeps all per-call state on its own stack, so one
// Executable may run on several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::runtime {

// A native kernel: void kernel(void* const* buffers, const int64_t* scalars).
using KernelEntry = void (*)(void* const* buffers, const int64_t* scalars);
// A generic kernel (an evaluator): sees the buffers as tensors.
using KernelLauncher =
    std::function<void(std::span<const Tensor> buffers, std::span<const int64_t> scalars)>;

// An integer computed from symbolic dims at call time (a buffer's dim), as a
// postfix program: `N * 5` is {Symbol 0, Const 5, Mul}. Div/Mod are floor
// division and modulo, and x / 0 and x % 0 give 0 (as in loop IR).
struct SizeExpr {
  enum class Op : uint8_t { Const, Symbol, Add, Sub, Mul, Div, Mod, Min, Max, LT, LE, EQ, Select };
  struct Term {
    Op op = Op::Const;
    int64_t value = 0;  // Const: the value; Symbol: the symbol slot
  };
  std::vector<Term> terms;

  static SizeExpr constant(int64_t v) { return {{{Op::Const, v}}}; }
  static SizeExpr symbol(int slot) { return {{{Op::Symbol, slot}}}; }
  // Appends `op` (arity 2, or 3 for Select: cond, true, false) after the operands.
  int64_t eval(std::span<const int64_t> symbols) const;
  // Text with symbol names: "(N * 5)".
  std::string str(std::span<const std::string> symbol_names) const;
  // Throws InternalError when the program is malformed (stack depth, slots).
  void validate(size_t num_symbols) const;
};

// What one graph input must look like; checked before anything runs.
struct InputSpec {
  enum class Kind : uint8_t { Tensor, Int, Float, Bool, None };
  std::string name;
  Kind kind = Kind::Tensor;
  DType dtype = DType::F32;  // Tensor: the exact dtype
  std::string type_str;      // as the graph prints it: "f32[N, 784]", "int"
  struct DimSpec {
    int64_t value = 0;
    int symbol = -1;  // >= 0: symbolic, this symbol slot
  };
  std::vector<DimSpec> dims;
};

// How one int64 scalar argument of a kernel is computed.
struct ScalarRecipe {
  enum class Kind : uint8_t {
    Symbol,      // the value of symbol slot `index`
    Stride,      // the stride (elements) of dim `dim` of the kernel's buffer argument `index`
    InputValue,  // the value of scalar input `index`, packed as `dtype`
  };
  Kind kind = Kind::Symbol;
  int index = 0;
  int dim = 0;
  DType dtype = DType::I64;  // InputValue: integers as is, f64 bit-cast, f32 in the low bits
};

// A buffer slot: a graph input, a constant, or a buffer the plan allocates.
struct Slot {
  enum class Kind : uint8_t { Input, Constant, Planned };
  Kind kind = Kind::Planned;
  std::string name;
  int input = -1;               // Input: the graph input index
  Tensor constant;              // Constant: the data (packed)
  DType dtype = DType::F32;     // Planned
  std::vector<SizeExpr> shape;  // Planned: dims
};

struct Launch {
  std::string name;
  KernelEntry entry = nullptr;  // one of entry / launcher
  KernelLauncher launcher;
  struct Arg {
    int slot = 0;
    bool packed = true;    // the kernel indexes it row-major: pass a packed copy if needed
    bool written = false;  // an output or scratch of this kernel
  };
  std::vector<Arg> args;
  std::vector<ScalarRecipe> scalars;
};

struct ExecutableStats {
  int64_t launches = 0;        // kernels run
  int64_t skipped = 0;         // kernels skipped because everything they write is empty
  int64_t reused_buffers = 0;  // planned buffers served from a dead buffer of this call
  int64_t allocated_buffers = 0;
  // Bytes of the buffers this call allocated (outputs and intermediates after
  // liveness-based reuse): the peak memory the plan needs beyond the inputs.
  int64_t allocated_bytes = 0;
  // The most bytes of intermediates (planned buffers that are not outputs)
  // alive at once, during any launch.
  int64_t peak_intermediate_bytes = 0;
};

class Executable {
 public:
  // `name` prefixes messages ("@mlp").
  explicit Executable(std::string name) : name_(std::move(name)) {}

  int add_symbol(std::string name);                // returns the slot; names are unique
  int find_symbol(const std::string& name) const;  // -1 when absent
  void add_input(InputSpec spec);  // input i is slot i: add inputs before other slots
  int add_slot(Slot slot);
  void add_launch(Launch launch);
  void set_outputs(std::vector<int> slots);  // -1: an undefined tensor (a none output)

  // Checks recipes and slot references, and computes each planned slot's live
  // range over the launches. Call once after building; run() requires it.
  void finalize();

  // Checks the inputs (count, kind, dtype, rank, static dims, consistent
  // symbols; kiln::Error naming the input), runs the launches, returns outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          ExecutableStats* stats = nullptr) const;

  // The plan as text: slots with shapes and live ranges, launches with their
  // arguments and scalar recipes.
  std::string describe() const;

  const std::string& name() const { return name_; }
  const std::vector<InputSpec>& inputs() const { return inputs_; }
  const std::vector<Launch>& launches() const { return launches_; }
  const std::vector<Slot>& slots() const { return slots_; }

 private:
  std::vector<int64_t> bind_inputs(const std::vector<Tensor>& inputs) const;

  std::string name_;
  std::vector<std::string> symbols_;
  std::vector<InputSpec> inputs_;
  std::vector<Slot> slots_;
  std::vector<Launch> launches_;
  std::vector<int> outputs_;
  // Filled by finalize(): live range of each slot (launch indices), and the
  // planned slots to free after each launch.
  std::vector<int> first_use_, last_use_;
  std::vector<std::vector<int>> defs_at_, frees_at_;
  bool finalized_ = false;
};

}  // namespace kiln::runtime
