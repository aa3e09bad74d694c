// Library launches of the cuda backend (see cuda_library.h).
#include "api/cuda_library.h"

#include <cstring>
#include <map>

#include "ir/loop/loop_eval.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/lower/gpu/vendor_candidates.h"
#include "runtime/cuda/vendor_libs.h"

namespace kiln::api {
namespace {

bool is_library_name(const std::string& name) {
  return name == passes::kCublasLtCall || name == passes::kCudnnCall;
}

// The kernel's calls, and whether anything else than loops holds them.
struct CallFinder : loop::IRVisitor {
  using loop::IRVisitor::visit_node;
  const loop::ExternCall* call = nullptr;
  int calls = 0;
  bool other = false;
  void visit_node(const loop::ExternCall* op) override {
    ++calls;
    if (is_library_name(op->name)) call = op;
  }
  void visit_node(const loop::Store*) override { other = true; }
};

class LibraryKernel final : public runtime::KernelFunction {
 public:
  LibraryKernel(const loop::Kernel& k, const loop::ExternCall& call, Device device)
      : kernel_(k.name), name_(call.name), args_(call.args), device_(device) {
    for (const loop::Expr& s : k.scalars) scalars_.push_back(s.as<loop::Var>()->name);
    for (const loop::Buf& b : call.bufs) {
      int index = -1;
      for (size_t i = 0; i < k.buffers.size(); ++i) {
        if (k.buffers[i] == b) index = int(i);
      }
      KILN_INTERNAL_CHECK(index >= 0, "cuda: library kernel " << k.name << " calls with buffer "
                                                              << b->name
                                                              << " that is not a parameter");
      buffers_.push_back(index);
    }
  }

  void launch(std::span<const Tensor> buffers, std::span<const int64_t> scalars,
              const runtime::LaunchConfig& config) const override {
    KILN_INTERNAL_CHECK(scalars.size() == scalars_.size(),
                        "cuda: library kernel " << kernel_ << " got " << scalars.size()
                                                << " scalars for " << scalars_.size());
    std::map<std::string, int64_t> vars;
    for (size_t i = 0; i < scalars_.size(); ++i) vars[scalars_[i]] = scalars[i];
    std::vector<int64_t> a;
    for (const loop::Expr& e : args_) a.push_back(loop::eval_int(e, vars));
    std::vector<const Tensor*> t;
    for (int i : buffers_) t.push_back(&buffers[size_t(i)]);
    if (name_ == passes::kCublasLtCall) {
      matmul(a, t, config.stream);
    } else {
      conv(a, t, config.stream);
    }
  }

 private:
  // The element at `offset` of tensor `t`, as a device address.
  static char* at(const Tensor& t, int64_t offset) {
    return static_cast<char*>(t.data_ptr()) + offset * int64_t(dtype_size(t.dtype()));
  }

  void matmul(const std::vector<int64_t>& a, const std::vector<const Tensor*>& t,
              runtime::Stream stream) const {
    using namespace passes;
    runtime::cuda::MatmulArgs m;
    m.dtype = t[2]->dtype();
    m.M = a[kLtM], m.N = a[kLtN], m.K = a[kLtK];
    m.a_m = a[kLtAm], m.a_k = a[kLtAk];
    m.b_k = a[kLtBk], m.b_n = a[kLtBn];
    m.c_m = a[kLtCm], m.c_n = a[kLtCn];
    if (a[kLtEpilogue] == 1) m.epilogue = runtime::cuda::BlasEpilogue::Bias;
    // Batch dims: size-1 ones dropped, the innermost as cuBLASLt's strided
    // batch with the outer ones merged into it where the strides allow, the
    // rest looped over here.
    struct Dim {
      int64_t size, sa, sb, sc;
    };
    std::vector<Dim> dims;
    for (size_t i = kLtFixedArgs; i + 3 < a.size(); i += 4) {
      if (a[i] != 1) dims.push_back({a[i], a[i + 1], a[i + 2], a[i + 3]});
    }
    for (const Dim& d : dims) {
      if (d.size == 0) return;
    }
    Dim inner{1, 0, 0, 0};
    if (!dims.empty()) {
      inner = dims.back();
      dims.pop_back();
      while (!dims.empty()) {
        const Dim& o = dims.back();
        if (o.sa != inner.sa * inner.size || o.sb != inner.sb * inner.size ||
            o.sc != inner.sc * inner.size) {
          break;
        }
        inner.size *= o.size;
        dims.pop_back();
      }
    }
    m.batch = inner.size, m.a_b = inner.sa, m.b_b = inner.sb, m.c_b = inner.sc;
    KILN_USER_CHECK(t.size() <= 3 || m.N <= 1 || a[kLtBiasStride] == 1,
                    "cuda: kernel " << kernel_ << ": cublasLt needs a contiguous bias (stride "
                                    << a[kLtBiasStride] << ")");
    const std::string problem = runtime::cuda::matmul_layout_problem(m);
    KILN_USER_CHECK(problem.empty(), "cuda: kernel " << kernel_ << ": cublasLt cannot read its "
                                                     << "operands: " << problem);
    int64_t outer = 1;
    for (const Dim& d : dims) outer *= d.size;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t oa = a[kLtAOffset], ob = a[kLtBOffset], oc = a[kLtCOffset], rest = o;
      for (size_t d = dims.size(); d-- > 0;) {
        const int64_t i = rest % dims[d].size;
        rest /= dims[d].size;
        oa += i * dims[d].sa, ob += i * dims[d].sb, oc += i * dims[d].sc;
      }
      m.a = at(*t[0], oa), m.b = at(*t[1], ob), m.c = at(*t[2], oc);
      if (t.size() > 3) m.bias = at(*t[3], a[kLtBiasOffset]);
      runtime::cuda::cublaslt_matmul(device_.index, m, stream);
    }
  }

  void conv(const std::vector<int64_t>& a, const std::vector<const Tensor*>& t,
            runtime::Stream stream) const {
    using namespace passes;
    runtime::cuda::ConvArgs c;
    c.dtype = t[2]->dtype();
    c.n = a[kDnnN], c.c = a[kDnnC], c.h = a[kDnnH], c.w = a[kDnnW];
    c.x_strides[0] = a[kDnnXsN], c.x_strides[1] = a[kDnnXsC];
    c.x_strides[2] = a[kDnnXsH], c.x_strides[3] = a[kDnnXsW];
    // cuDNN wants a stride for every dim, also of size 1 (an unbatched input
    // has none for n).
    if (c.n == 1) c.x_strides[0] = std::max<int64_t>(c.x_strides[0], 1);
    c.x = at(*t[0], a[kDnnXOffset]);
    c.k = a[kDnnK], c.r = a[kDnnR], c.s = a[kDnnS];
    const int64_t cg = c.c / std::max<int64_t>(a[kDnnGroups], 1);
    const int64_t packed[4] = {cg * c.r * c.s, c.r * c.s, c.s, 1};
    const int64_t sizes[4] = {c.k, cg, c.r, c.s};
    for (int d = 0; d < 4; ++d) {
      KILN_USER_CHECK(sizes[d] <= 1 || a[size_t(kDnnWsK + d)] == packed[d],
                      "cuda: kernel " << kernel_
                                      << ": cudnn needs a packed filter; dim " << d
                                      << " has stride " << a[size_t(kDnnWsK + d)]);
    }
    c.filter = at(*t[1], a[kDnnWOffset]);
    c.groups = a[kDnnGroups];
    c.pad_h = a[kDnnPadH], c.pad_w = a[kDnnPadW];
    c.stride_h = a[kDnnStrideH], c.stride_w = a[kDnnStrideW];
    c.dil_h = a[kDnnDilH], c.dil_w = a[kDnnDilW];
    c.p = a[kDnnP], c.q = a[kDnnQ];
    c.y = at(*t[2], a[kDnnYOffset]);
    KILN_USER_CHECK(t.size() <= 3 || c.k <= 1 || a[kDnnBiasStride] == 1,
                    "cuda: kernel " << kernel_ << ": cudnn needs a contiguous bias (stride "
                                    << a[kDnnBiasStride] << ")");
    if (t.size() > 3) c.bias = at(*t[3], a[kDnnBiasOffset]);
    runtime::cuda::cudnn_conv(device_.index, c, stream);
  }

  std::string kernel_, name_;
  std::vector<loop::Expr> args_;
  std::vector<std::string> scalars_;
  std::vector<int> buffers_;
  Device device_;
};

}  // namespace

const loop::ExternCall* library_call(const loop::Kernel& k) {
  if (!k.body.defined()) return nullptr;
  CallFinder f;
  f.visit(k.body);
  if (!f.call) return nullptr;
  KILN_INTERNAL_CHECK(f.calls == 1 && !f.other,
                      "cuda: kernel " << k.name << " mixes a library call with generated code");
  return f.call;
}

std::shared_ptr<const runtime::KernelFunction> library_kernel(const loop::Kernel& k,
                                                              Device device) {
  const loop::ExternCall* call = library_call(k);
  KILN_INTERNAL_CHECK(call, "cuda: kernel " << k.name << " is not a library call");
  return std::make_shared<LibraryKernel>(k, *call, device);
}

std::string library_call_text(const loop::ExternCall& call) {
  return call.name == passes::kCublasLtCall ? "cublasLt (matmul)" : "cudnn (conv2d)";
}

}  // namespace kiln::api
