// Shared by the LLVM backend tests: loop-IR building shorthands and a fixture
// that compiles hand-built kernels and keeps their modules alive.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "kiln/tensor.h"

namespace kiln::codegen {

using namespace kiln::loop;  // NOLINT: IR building reads better unqualified

inline Expr var(const std::string& name, VType t = i64_t()) {
  return Var::make(t, name);
}
inline Expr f32(double v) {
  return FloatImm::make({DType::F32, 1}, v);
}
inline Expr ramp(Expr base, int lanes) {
  return Ramp::make(std::move(base), make_int(1), lanes);
}
inline Expr bcast(Expr v, int lanes) {
  return Broadcast::make(std::move(v), lanes);
}

// Compiles `kernels` and keeps the module alive for as long as the fixture.
class LlvmBackendTest : public ::testing::Test {
 protected:
  KernelFn compile(const std::vector<Kernel>& kernels, CodegenOptions options = {}) {
    modules_.push_back(backend_->compile(kernels, options));
    return modules_.back()->lookup(kernels[0].name);
  }
  // Returns the kernel's status word (runtime/kernel_status.h).
  static int32_t run(KernelFn fn, const std::vector<Tensor>& bufs,
                     const std::vector<int64_t>& scalars = {}) {
    std::vector<void*> ptrs;
    for (const Tensor& t : bufs) ptrs.push_back(t.data_ptr());
    int32_t status = 0;
    ptrs.push_back(&status);
    fn(ptrs.data(), scalars.data());
    return status;
  }
  static int64_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }

  std::unique_ptr<Backend> backend_ = make_llvm_backend();
  std::vector<std::unique_ptr<CompiledModule>> modules_;
};

}  // namespace kiln::codegen
