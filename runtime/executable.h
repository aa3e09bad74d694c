// Executable — the launch list a compiled function runs: kernels, buffer
// slots, the recipes that compute each kernel's scalar arguments from the
// input shapes and strides, and a buffer plan that reuses the memory of dead
// intermediates (liveness over the launch order).
//
// It knows no compiler: kernels are KernelFunctions (host machine code behind
// a function pointer, or anything callable, e.g. an evaluator), buffers are
// slot indices, and sizes are tiny postfix programs over symbolic dims. The
// api layer translates lowered loop IR into this form. run() keeps all
// per-call state on its own stack, so one Executable may run on several
// threads at once.
//
// Devices: each launch runs on one device and each planned slot lives on one
// (allocated through that device's runtime, runtime/device.h). Where a launch
// reads a slot that lives elsewhere, finalize() adds a copy slot on the
// launch's device, filled before its first reader and shared by later readers
// there; constants read on a device are uploaded once, by finalize(). At run
// time an input that already lives on the launch's device is used in place,
// an input on a device that a host kernel reads is copied to the host, and
// outputs are returned on the device of the first tensor input (the host when
// there is none).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "runtime/device.h"
#include "runtime/profile.h"
#include "runtime/size_expr.h"

namespace kiln::runtime {

// A native host kernel: void kernel(void* const* buffers, const int64_t* scalars).
using KernelEntry = void (*)(void* const* buffers, const int64_t* scalars);

// How a device kernel is launched: grid and block extents (x, y, z), dynamic
// shared memory per block, and the stream. Host kernels ignore it.
struct LaunchConfig {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t shared_bytes = 0;
  Stream stream = nullptr;
};

// The one interface every kernel is launched through. `buffers` follow the
// launch's arguments and live on the launch's device (run() checks);
// `scalars` are the recipes' values.
class KernelFunction {
 public:
  virtual ~KernelFunction() = default;
  virtual void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
                      const LaunchConfig& config) const = 0;
};

// Host machine code: called with the buffers' data pointers.
class HostKernel final : public KernelFunction {
 public:
  explicit HostKernel(KernelEntry entry) : entry_(entry) {}
  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const LaunchConfig& config) const override;

 private:
  KernelEntry entry_;
};

// Anything callable (an evaluator): sees the buffers as tensors.
using KernelCallback = std::function<void(
    std::span<const Tensor> buffers, std::span<const int64_t> scalars, const LaunchConfig& config)>;
class GenericKernel final : public KernelFunction {
 public:
  explicit GenericKernel(KernelCallback fn) : fn_(std::move(fn)) {}
  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const LaunchConfig& config) const override {
    fn_(buffers, scalars, config);
  }

 private:
  KernelCallback fn_;
};

inline std::shared_ptr<const KernelFunction> host_kernel(KernelEntry entry) {
  return std::make_shared<HostKernel>(entry);
}
inline std::shared_ptr<const KernelFunction> generic_kernel(KernelCallback fn) {
  return std::make_shared<GenericKernel>(std::move(fn));
}

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
    Constant,    // `value` (a start index the kernel takes as an argument)
  };
  Kind kind = Kind::Symbol;
  int index = 0;
  int dim = 0;
  DType dtype = DType::I64;  // InputValue: integers as is, f64 bit-cast, f32 in the low bits
  int64_t value = 0;         // Constant
};

// A buffer slot: a graph input, a constant, a buffer the plan allocates, or
// (made by finalize()) another slot's data on another device.
struct Slot {
  enum class Kind : uint8_t { Input, Constant, Planned, Copy };
  Kind kind = Kind::Planned;
  std::string name;
  int input = -1;               // Input: the graph input index
  Tensor constant;              // Constant: the data (packed; on `device`)
  DType dtype = DType::F32;     // Planned, Copy
  std::vector<SizeExpr> shape;  // Planned: dims
  // Planned: where it is allocated. Inputs and declared constants are host
  // slots; a Copy, or a constant uploaded by finalize(), lives on the device
  // of the launches that read it.
  Device device;
  int source = -1;  // Copy and uploaded constants: the slot copied
};

struct Launch {
  std::string name;
  Device device;  // where it runs; every buffer argument lives there when it does
  std::shared_ptr<const KernelFunction> kernel;
  struct Arg {
    int slot = 0;
    bool packed = true;    // the kernel indexes it row-major: pass a packed copy if needed
    bool written = false;  // an output or scratch of this kernel
    // Not packed: the kernel takes the innermost stride to be 1 (passes only
    // the outer ones): a view whose innermost stride is not 1 is packed.
    bool unit_inner = false;
  };
  std::vector<Arg> args;
  std::vector<ScalarRecipe> scalars;
  // Device launches: grid and block extents (x, y, z) and dynamic shared
  // memory bytes, evaluated from the symbols per call like slot shapes
  // (extents must come out >= 1, shared bytes >= 0). Host launches ignore them.
  std::array<SizeExpr, 3> grid{SizeExpr::constant(1), SizeExpr::constant(1), SizeExpr::constant(1)};
  std::array<SizeExpr, 3> block{SizeExpr::constant(1), SizeExpr::constant(1),
                                SizeExpr::constant(1)};
  SizeExpr shared_bytes = SizeExpr::constant(0);
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
  // Copies between devices this call made (inputs in, slots between devices,
  // outputs back) and their bytes; an input used in place is not one.
  int64_t copies = 0;
  int64_t copied_bytes = 0;
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

  // Checks recipes, slot references and devices, adds the copy slots (and
  // uploads constants) where a launch reads a slot living on another device,
  // and computes each slot's live range over the launches. Call once after
  // building; run() requires it. kiln::Error when a launch's device is
  // unavailable.
  void finalize();

  // Checks the inputs (count, kind, dtype, rank, static dims, consistent
  // symbols, usable device; kiln::Error naming the input), runs the launches,
  // returns outputs on the device of the first tensor input. With `profile`,
  // records each launch's time and bytes and the parallel chunks
  // (runtime/profile.h); without, a launch pays one null test for it.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, ExecutableStats* stats = nullptr,
                          RunProfile* profile = nullptr) const;

  // The plan as text: slots with shapes, devices and live ranges (copies
  // among them), launches with their arguments, scalar recipes and, on a
  // device, the device and the grid/block expressions.
  std::string describe() const;

  const std::string& name() const { return name_; }
  const std::vector<InputSpec>& inputs() const { return inputs_; }
  const std::vector<Launch>& launches() const { return launches_; }
  // Declared slots, then (after finalize()) the copies and uploads it added.
  const std::vector<Slot>& slots() const { return slots_; }

 private:
  std::vector<int64_t> bind_inputs(const std::vector<Tensor>& inputs) const;
  void drop_derived_slots();
  int derived_slot(int source, Device device, int launch);
  std::string slot_origin(int slot) const;

  std::string name_;
  std::vector<std::string> symbols_;
  std::vector<InputSpec> inputs_;
  std::vector<Slot> slots_;
  std::vector<Launch> launches_;
  std::vector<int> outputs_;
  size_t declared_slots_ = 0;  // slots_ beyond this were added by finalize()
  // Filled by finalize(): live range of each slot (launch indices), the
  // planned and copy slots to fill before and free after each launch, the
  // slot each launch argument reads (a copy where devices differ), which
  // inputs the host reads in place, and which slots are outputs.
  std::vector<int> first_use_, last_use_;
  std::vector<std::vector<int>> defs_at_, frees_at_;
  std::vector<std::vector<int>> arg_slots_;
  std::vector<bool> host_reads_input_, is_output_;
  bool has_device_launches_ = false;
  bool finalized_ = false;
  size_t max_launch_args_ = 0, max_launch_scalars_ = 0;  // run() reserves these once
};

}  // namespace kiln::runtime
