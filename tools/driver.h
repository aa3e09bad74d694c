// Shared pieces of the `kiln` driver: the subcommand entry points, a small
// argument reader, input specs (`NAME=PATH.npy`, `NAME=randn:f32:2x3`,
// `NAME=VALUE`), and loading a program (.kir graph or script) with its inputs.
//
// The driver uses only the public API (kiln/kiln.h), like any other user.
// Every subcommand returns its exit code; user mistakes throw kiln::Error and
// main() turns them into "error: ..." and exit code 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/optimize.h"

namespace kiln::cli {

using Args = std::vector<std::string>;

int cmd_ops(const Args& args);
int cmd_check(const Args& args);
int cmd_run(const Args& args);
int cmd_dump(const Args& args);
int cmd_show(const Args& args);
int cmd_explain(const Args& args);
int cmd_backends(const Args& args);

// Reads one subcommand's arguments left to right. Options are `--name value` or
// `--name=value`; anything not starting with '-' is positional.
class ArgReader {
 public:
  ArgReader(std::string command, const Args& args) : command_(std::move(command)), args_(args) {}

  bool done() const { return pos_ >= args_.size(); }
  bool help();                       // consumes -h / --help
  bool flag(std::string_view name);  // consumes --name
  // Consumes `--name V` or `--name=V` (any of `names`); error when V is missing.
  std::optional<std::string> value(std::initializer_list<std::string_view> names);
  std::optional<std::string> positional();
  [[noreturn]] void unknown() const;  // "CMD: unknown option '--x' (see 'kiln CMD --help')"

 private:
  std::string command_;
  const Args& args_;
  size_t pos_ = 0;
};

// --- graph pipeline flags (run, dump) ----------------------------------------------------

// Consumes --print-after-all, --print-after=PASS or --time-passes into `o`;
// false when the next argument is none of them. An unknown PASS is an error
// listing the passes.
bool read_pipeline_flag(ArgReader& r, OptimizeOptions* o);
bool any_pipeline_flag(const OptimizeOptions& o);
// The help lines for those flags; `where` says where their output goes.
std::string pipeline_flags_help(const std::string& where);

// --- device flags (run, explain, dump) ----------------------------------------------------

// Consumes --device DEV (kiln::Device::parse) or --backend NAME into `o`;
// false when the next argument is neither.
bool read_device_flag(ArgReader& r, CompileOptions* o);
std::string device_flags_help();

// --- autotuning flags (run, explain, dump) -----------------------------------------------

// Consumes --autotune or --autotune-budget S into `o`; false when the next
// argument is neither.
bool read_autotune_flag(ArgReader& r, CompileOptions* o);
std::string autotune_flags_help();
// The sizes of `tensors`, as CompileOptions::example_shapes takes them.
std::vector<std::vector<int64_t>> shapes_of(const std::vector<Tensor>& tensors);

// --- input specs ------------------------------------------------------------------------

struct InputArg {
  std::string name;
  std::string spec;
};
InputArg split_input(const std::string& arg);  // "NAME=SPEC"; error without '='

// `randn:f32:32x784`, `rand:f16:7`, `zeros:i64:3x4`, `ones:f32:`, `randn:f32:scalar`,
// or a bare `randn` (type taken from the declared parameter type).
struct Generator {
  std::string kind;  // randn, rand, zeros, ones
  std::optional<TensorSpec> type;
};
std::optional<Generator> parse_generator(const std::string& spec);
Tensor generate(const Generator& g, const TensorSpec& type, uint64_t seed);

// A tensor argument: a generator spec or a .npy path. `declared` fills in a
// bare generator's type (must be static).
Tensor tensor_from_spec(const std::string& name, const std::string& spec,
                        const std::optional<TensorSpec>& declared, uint64_t seed);
// The type a tensor spec stands for, without generating data (for dump).
TensorSpec type_from_spec(const std::string& name, const std::string& spec,
                          const std::optional<TensorSpec>& declared);

// The item specs of a List[Tensor] argument written `[a.npy,randn:f32:2x3]`
// (`[]` is an empty list); anything else is an error naming the parameter.
std::vector<std::string> tensor_list_specs(const std::string& name, const std::string& spec);

// A non-tensor value: 1, -2, 1e-5, true, none, [2, 3], [0.5, 1.0], or a string
// (quotes optional). `kind` picks the parse and rejects what does not fit.
Attr parse_value(const std::string& name, const std::string& text, ParamKind kind);

// "f32[2, 3]" followed by the values (Tensor::to_string), plus min/max/mean for
// large floating tensors.
std::string tensor_summary(const Tensor& t);

// --- programs -----------------------------------------------------------------------------

// What FILE holds: text IR (.kir, or text starting with `graph`) or a script.
struct Program {
  std::string path;
  bool is_script = false;
  std::optional<Script> script;
  Function graph;  // the parsed .kir (when !is_script)
};
Program load_program(const std::string& path);

// A function specialized for the given inputs, with the input tensors in the
// Function's input order. With `make_tensors` false only types are worked out.
struct Bound {
  Function fn;
  std::vector<Tensor> tensors;
  double lower_ms = 0;  // time spent lowering a script def (0 for .kir)
};
Bound bind_program(const Program& p, const std::string& fn, const std::vector<InputArg>& inputs,
                   uint64_t seed, bool make_tensors);

}  // namespace kiln::cli
