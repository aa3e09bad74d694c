// Check 6c of issue 12, shared by the tests that run it: the kernels Kiln
// generates for a cuda device (compiled without the device: CompileOptions
// load false, sm_90) compile with NVRTC to an sm_90 CUBIN, and ptxas reports
// no spills, no local memory for elementwise and reduction kernels (their
// scratch must stay in registers) and at most 48 KiB of shared memory. One
// exception: CUDA's sin and cos reduce a huge argument (|x| > 105615) with a
// small array in local memory (Payne-Hanek), so a kernel that calls them may
// have a local frame; it still must not spill.
//
// NVRTC costs ~35 ms per program plus ~9 ms per kernel, so kernels from many
// functions are gathered and compiled together, kBatch per program (the
// emitter makes their symbols unique).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "api/compile_internal.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc.h"
#include "ir/loop/visitor.h"
#include "ir/op_registry.h"
#include "kiln/error.h"

namespace kiln::test {

class CudaCompileCheck {
 public:
  static constexpr size_t kBatch = 200;

  // Why the check cannot run here (NVRTC absent), or empty.
  static std::string skip_reason() { return codegen::cuda::nvrtc_unavailable_reason(); }

  // Generates `g`'s kernels for cuda (sm_90) and keeps them for run(); a
  // failure to generate is recorded under `what`.
  void add(const std::string& what, const ir::Graph& g) {
    CompileOptions o;
    o.device = Device::cuda(0);
    o.load = false;
    o.cuda_arch = "sm_90";
    o.use_cache = false;
    o.disk_cache = false;
    std::shared_ptr<CompiledFunction::Impl> impl;
    try {
      impl = compile_detail::build_with_algorithm(g, o, "cuda", "");
    } catch (const std::exception& e) {
      failures_.push_back(what + ": does not compile for cuda: " + e.what());
      return;
    }
    ++functions_;
    for (size_t i = 0; i < impl->scheduled.size(); ++i) {
      bool contraction = impl->groups.size() != impl->scheduled.size();  // unknown: lenient
      if (!contraction) {
        for (const ir::Node* n : impl->groups[i].nodes) {
          // Contractions, and "other" ops with loops of their own (a sort's
          // per-thread row scratch), may use local memory.
          contraction |= n->def() && (n->def()->category == ir::OpCategory::Contraction ||
                                      n->def()->category == ir::OpCategory::Other);
        }
      }
      kernels_.push_back(
          {impl->scheduled[i], what, contraction || calls_sin_or_cos(impl->scheduled[i])});
    }
  }

  // Compiles every kernel added and checks the reports; the failures, one
  // line each (empty when all pass).
  std::vector<std::string> run() {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t start = 0; start < kernels_.size(); start += kBatch) {
      size_t end = std::min(kernels_.size(), start + kBatch);
      compile_batch(start, end);
      ++programs_;
    }
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return failures_;
  }

  std::string summary() const {
    return std::to_string(kernels_.size()) + " kernels of " + std::to_string(functions_) +
           " functions in " + std::to_string(programs_) + " NVRTC programs (sm_90), " +
           std::to_string(seconds_) + " s";
  }
  size_t kernels() const { return kernels_.size(); }

 private:
  struct Gathered {
    loop::Kernel kernel;
    std::string what;  // the function it came from
    bool local_ok;     // a contraction, a sort, or sin/cos/tan (local memory allowed)
  };

  static bool calls_sin_or_cos(const loop::Kernel& k) {
    struct Finder : loop::IRVisitor {
      using IRVisitor::visit_node;
      bool found = false;
      void visit_node(const loop::Call* op) override {
        // CUDA's f64 trig reduces huge arguments through a local array
        // (digamma's reflection calls tan).
        found |=
            op->name == "sin" || op->name == "cos" || op->name == "tan" || op->name == "digamma";
        IRVisitor::visit_node(op);
      }
    } f;
    if (k.body.defined()) f.visit(k.body);
    return f.found;
  }

  void compile_batch(size_t start, size_t end) {
    std::vector<loop::Kernel> batch;
    for (size_t i = start; i < end; ++i) batch.push_back(kernels_[i].kernel);
    codegen::cuda::CudaProgram p;
    codegen::cuda::CudaImage image;
    try {
      p = codegen::cuda::emit_cuda(batch);
      image = codegen::cuda::nvrtc_compile(p.source(), "check_6c.cu", {});
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (msg.size() > 6000) msg = msg.substr(0, 6000) + "\n...";
      failures_.push_back("kernels " + std::to_string(start) + ".." + std::to_string(end) +
                          " (from " + kernels_[start].what + " on): " + msg);
      return;
    }
    if (!image.cubin) {
      failures_.push_back("NVRTC made " + image.arch + " PTX, not an sm_90 CUBIN");
      return;
    }
    for (size_t i = start; i < end; ++i) {
      const Gathered& g = kernels_[i];
      const std::string& symbol = p.entries[i - start].symbol;
      const codegen::cuda::KernelResources* r = nullptr;
      for (const codegen::cuda::KernelResources& k : image.resources) {
        if (k.symbol == symbol) r = &k;
      }
      std::string where = g.what + ": kernel " + g.kernel.name + ": ";
      if (!r) {
        failures_.push_back(where + "no ptxas report");
        continue;
      }
      if (r->spill_stores || r->spill_loads) {
        failures_.push_back(where + "spills " + std::to_string(r->spill_stores) + " B stored, " +
                            std::to_string(r->spill_loads) + " B loaded");
      }
      if (!g.local_ok && r->stack_frame) {
        failures_.push_back(where + std::to_string(r->stack_frame) +
                            " B of local memory in an elementwise or reduction kernel");
      }
      if (r->shared > 48 * 1024) {
        failures_.push_back(where + std::to_string(r->shared) + " B of shared memory (> 48 KiB)");
      }
    }
  }

  std::vector<Gathered> kernels_;
  std::vector<std::string> failures_;
  int functions_ = 0, programs_ = 0;
  double seconds_ = 0;
};

}  // namespace kiln::test
