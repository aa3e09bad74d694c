// Emulated kernels in a compiled function's plan (emulated_function.h).
#include "tests/emu/emulated_function.h"

#include <cstring>
#include <set>

#include "ir/loop/visitor.h"
#include "kiln/error.h"

namespace kiln::emutest {

namespace {

// The buffers a kernel loads from and stores to.
struct Accesses : loop::IRVisitor {
  using loop::IRVisitor::visit_node;
  std::set<const loop::BufferNode*> loaded, stored;
  void visit_node(const loop::Load* op) override {
    loaded.insert(op->buf.get());
    loop::IRVisitor::visit_node(op);
  }
  void visit_node(const loop::Store* op) override {
    stored.insert(op->buf.get());
    loop::IRVisitor::visit_node(op);
  }
};

// Elements from a view's element 0 to its last one (what the kernel may touch).
size_t span_elements(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * std::abs(t.stride(d));
  return static_cast<size_t>(last + 1);
}

class EmulatedKernel final : public runtime::KernelFunction {
 public:
  EmulatedKernel(std::shared_ptr<const Library> lib, const KernelInfo& kernel,
                 const loop::Kernel& k)
      : lib_(std::move(lib)), kernel_(kernel), name_(k.name) {
    Accesses a;
    a.visit(k.body);
    for (const loop::Buf& b : k.buffers) {
      written_.push_back(a.stored.count(b.get()) != 0);
      write_only_.push_back(written_.back() && a.loaded.count(b.get()) == 0);
    }
  }

  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const runtime::LaunchConfig& config) const override {
    KILN_INTERNAL_CHECK(buffers.size() == written_.size(), "emulated kernel "
                                                               << name_ << ": " << buffers.size()
                                                               << " buffers, its loop "
                                                               << "kernel has " << written_.size());
    std::vector<Buffer> copies;
    std::vector<void*> pointers;
    copies.reserve(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      const Tensor& t = buffers[i];
      if (!t.defined()) {
        copies.emplace_back(1, 0, false);
        pointers.push_back(nullptr);
        continue;
      }
      const size_t bytes = span_elements(t) * t.element_size();
      copies.emplace_back(t.element_size(), span_elements(t), !is_floating(t.dtype()));
      if (!write_only_[i] && bytes != 0) std::memcpy(copies.back().data(), t.data_ptr(), bytes);
      pointers.push_back(copies.back().data());
    }
    auto dim = [](const int64_t* v) {
      return Dim{static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]),
                 static_cast<unsigned>(v[2])};
    };
    lib_->launch(kernel_, dim(config.grid), dim(config.block), pointers, scalars,
                 static_cast<size_t>(config.shared_bytes));
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (written_[i] && buffers[i].defined() && copies[i].bytes() != 0) {
        std::memcpy(buffers[i].data_ptr(), copies[i].data(), copies[i].bytes());
      }
    }
  }

 private:
  std::shared_ptr<const Library> lib_;
  const KernelInfo& kernel_;  // owned by lib_
  std::string name_;
  std::vector<bool> written_, write_only_;
};

}  // namespace

std::shared_ptr<const runtime::KernelFunction> emulated_kernel(std::shared_ptr<const Library> lib,
                                                               const KernelInfo& kernel,
                                                               const loop::Kernel& k) {
  return std::make_shared<EmulatedKernel>(std::move(lib), kernel, k);
}

void use_kernels(CompiledFunction::Impl& impl,
                 const std::vector<std::shared_ptr<const runtime::KernelFunction>>& kernels) {
  KILN_INTERNAL_CHECK(impl.exec != nullptr && kernels.size() == impl.scheduled.size(),
                      "use_kernels: " << kernels.size() << " kernels for " << impl.scheduled.size()
                                      << " scheduled ones");
  // Executable has no setter for a launch's kernel: the copy's launch list is
  // edited in place (the copy is ours and not const), and its finalized
  // state, which does not depend on the kernels, stays valid.
  auto exec = std::make_unique<runtime::Executable>(*impl.exec);
  auto& launches = const_cast<std::vector<runtime::Launch>&>(exec->launches());
  for (runtime::Launch& l : launches) {
    size_t i = 0;
    while (i < impl.scheduled.size() && impl.scheduled[i].name != l.name) ++i;
    KILN_INTERNAL_CHECK(i < impl.scheduled.size(),
                        "use_kernels: the plan launches " << l.name << ", which is not a kernel");
    l.kernel = kernels[i];
  }
  impl.exec = std::move(exec);
}

}  // namespace kiln::emutest
