// Check 6b of issue 12 for a batch of graphs: each graph is compiled for
// sim:0 (GPU-mapped kernels), its impl.scheduled printed by the CUDA emitter;
// all graphs' programs go into ONE Library::build (one compiler run), each
// compiled function's plan launches its emulated kernels (use_kernels), and
// every output of every run is compared with ir::interpret. An emulator report
// (race, divergent barrier, uninitialized shared read, ...) or an exception
// fails that run with the message; the CUDA C of the first failure of a group
// is shown.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "ir/interpreter.h"
#include "tests/emu/emulated_function.h"
#include "tests/unit/lower_test_util.h"

namespace kiln::emutest {

struct EmuRun {
  std::string what;
  std::vector<Tensor> feed;
};

// rtol, atol for an output of this dtype.
using Tolerance = std::function<std::pair<double, double>(DType)>;

class EmuCheck {
 public:
  // Compiles `g` (which may be destroyed after), emits its CUDA C and computes
  // the reference of each run; `group` names the report's group (e.g. the op).
  // `algorithm` names the contraction candidate every contraction runs (""
  // for the heuristic's choice).
  void add(const std::string& group, const std::string& what, const ir::Graph& g,
           const std::vector<EmuRun>& runs, Tolerance tol, const std::string& algorithm = "") {
    Case c;
    c.group = group;
    c.what = what;
    c.tol = std::move(tol);
    CompileOptions o;
    o.device = Device::sim(0);
    try {
      c.impl = compile_detail::build_with_algorithm(g, o, "loop-eval", algorithm);
      c.program = codegen::cuda::emit_cuda(c.impl->scheduled);
    } catch (const std::exception& e) {
      failures_.push_back(what + ": compile/emit: " + e.what());
      return;
    }
    for (const EmuRun& r : runs) {
      try {
        c.want.push_back(ir::interpret(g, r.feed));
      } catch (const Error&) {
        continue;  // the reference rejects these values (e.g. an integer power < 0)
      }
      c.runs.push_back(r);
    }
    cases_.push_back(std::move(c));
  }

  // Builds every case's program in one library, runs them all and expects no failure.
  void run_and_report(const std::string& name) {
    std::vector<Program> programs;
    for (size_t i = 0; i < cases_.size(); ++i) {
      // The file name the emulator's reports show.
      std::string file;
      for (char ch : cases_[i].group)
        file += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      programs.push_back({file + "_" + std::to_string(i) + ".cu", cases_[i].program.kernels});
    }
    std::shared_ptr<const Library> lib;
    try {
      lib = Library::build(programs);
    } catch (const std::exception& e) {
      FAIL() << name << ": the programs do not compile as C++: " << e.what();
    }
    int runs = 0;
    size_t kernels = 0;
    for (size_t p = 0; p < cases_.size(); ++p) {
      runs += run_case(lib, p);
      kernels += cases_[p].program.entries.size();
    }
    std::ostringstream os;
    for (const std::string& f : failures_) os << f << "\n";
    EXPECT_TRUE(failures_.empty()) << failures_.size() << " failures in " << name << ":\n"
                                   << os.str();
    std::cout << name << ": " << cases_.size() << " graphs, " << kernels << " emulated kernels, "
              << runs << " runs compared\n";
  }

 private:
  struct Case {
    std::string group, what;
    Tolerance tol;
    std::shared_ptr<CompiledFunction::Impl> impl;
    codegen::cuda::CudaProgram program;
    std::vector<EmuRun> runs;
    std::vector<std::vector<Tensor>> want;  // parallel to runs
  };

  // Runs case `p` of `lib`; returns the runs compared.
  int run_case(const std::shared_ptr<const Library>& lib, size_t p) {
    Case& c = cases_[p];
    CompiledFunction f;
    try {
      std::vector<std::shared_ptr<const runtime::KernelFunction>> kernels;
      for (size_t i = 0; i < c.impl->scheduled.size(); ++i) {
        kernels.push_back(emulated_kernel(lib, lib->kernel(p, c.program.entries[i].symbol),
                                          c.impl->scheduled[i]));
      }
      use_kernels(*c.impl, kernels);
      f = CompiledFunction::from_impl(c.impl);
    } catch (const std::exception& e) {
      failures_.push_back(c.what + ": loading the emulated kernels: " + e.what());
      return 0;
    }
    int compared = 0;
    for (size_t r = 0; r < c.runs.size(); ++r) {
      ++compared;
      std::vector<Tensor> got;
      try {
        got = f(c.runs[r].feed);
      } catch (const std::exception& e) {
        fail(c, c.runs[r].what + ": run: " + e.what());
        continue;
      }
      const std::vector<Tensor>& want = c.want[r];
      if (got.size() != want.size()) {
        fail(c, c.runs[r].what + ": output count");
        continue;
      }
      for (size_t i = 0; i < got.size(); ++i) {
        const auto [rtol, atol] = c.tol(want[i].dtype());
        ::testing::AssertionResult ok = test::tensors_close(got[i], want[i], rtol, atol);
        if (!ok) fail(c, c.runs[r].what + " output " + std::to_string(i) + ": " + ok.message());
      }
    }
    return compared;
  }

  void fail(const Case& c, const std::string& what) {
    std::string msg = c.what + " " + what;
    if (shown_.insert(c.group).second) msg += "\n" + c.program.kernels.substr(0, 3000);
    failures_.push_back(msg);
  }

  std::vector<Case> cases_;
  std::vector<std::string> failures_;
  std::set<std::string> shown_;
};

}  // namespace kiln::emutest
