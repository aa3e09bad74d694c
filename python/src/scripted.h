// kiln._C.ScriptedFunction: one script def, compiled once per call signature.
//
// A call's signature is, for each tensor argument, its dtype, rank and the
// sizes of its static dims (dims the script or `dynamic=` declares symbolic
// are left out, so every size there shares one compilation), and for each
// other argument its value (non-tensor parameters are constants baked into
// the graph, as with kiln::Script::lower). The first call with a new
// signature lowers and compiles with the GIL released; later calls look the
// signature up and run. Safe to call from several Python threads at once.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::python {

namespace nb = nanobind;

// For tests of zero-copy calls: when on, each call records (per thread) the
// data pointers of the tensors it hands to the compiled function.
std::atomic<bool>& trace_inputs();
std::vector<uintptr_t>& last_input_pointers();

struct Specialization {
  Function function;
  CompiledFunction compiled;
  std::vector<ValueInfo> outputs;
};

class ScriptedFunction {
 public:
  using DynamicDims = std::map<std::string, std::map<int64_t, std::string>>;
  // The script text comes from the Python object's `_source_text()` method
  // ((source, filename)), called once at the first call or query, so that
  // functions defined after a decorated one are found; no Python object is
  // held here (the subclass's __dict__ holds them, where the GC sees them).
  // `dynamic`: parameter name -> {dim index -> symbol}; negative indices count
  // from the end of the rank.
  ScriptedFunction(std::string fn, CompileOptions options, DynamicDims dynamic);

  nb::object call(nb::args args, nb::kwargs kwargs);

  // The specialization for these arguments (compiling it if needed), for
  // .graph / .explain() / .dump(): the one of the last call when none given.
  std::shared_ptr<const Specialization> specialize(nb::args args, nb::kwargs kwargs);
  std::shared_ptr<const Specialization> last() const;
  size_t num_compiled() const;
  const std::string& name() const { return fn_; }
  // Parses the script if that has not happened yet (the GIL must be held).
  void load();
  const std::string& filename();
  std::vector<std::string> param_names();

 private:
  struct Prepared;
  void prepare(nb::args& args, nb::kwargs& kwargs, Prepared& p) const;
  std::string symbol_of(size_t param, int64_t dim, int64_t rank) const;
  std::shared_ptr<const Specialization> lookup_or_compile(nb::args& args, nb::kwargs& kwargs,
                                                          const Prepared& hot);

  bool loaded_ = false;  // written once under mu_ with the GIL held
  Script script_;
  std::string fn_;
  ScriptFunction def_;
  CompileOptions options_;
  DynamicDims dynamic_given_;
  std::vector<std::map<int64_t, std::string>> dynamic_;  // per parameter
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Specialization>> cache_;
  std::shared_ptr<const Specialization> last_;
};

}  // namespace kiln::python
