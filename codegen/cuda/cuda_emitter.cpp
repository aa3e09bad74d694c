// The CUDA C emitter's statements, kernels and names (see cuda_emitter.h);
// expressions are in emit_expr.cpp.
#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "codegen/cuda/emitter_internal.h"
#include "codegen/cuda/prelude.h"
#include "ir/loop/canonical.h"
#include "ir/loop/prefetch.h"
#include "ir/loop/visitor.h"
#include "ir/loop/warp_mma.h"
#include "kiln/error.h"

namespace kiln::codegen::cuda {

using loop::Expr;
using loop::ForKind;
using loop::Stmt;

// --------------------------------------------------------------------------- names

namespace {

// C++ keywords, CUDA's built-in variables, and names the prelude or the math
// headers may define as macros or functions: never an identifier of ours.
const std::unordered_set<std::string>& reserved_names() {
  static const std::unordered_set<std::string> names = {
      // C++20 keywords and alternative tokens
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "restrict", "typeof",
      // CUDA
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
      // macros and functions the prelude and <math.h> bring
      "INFINITY", "NAN", "NULL", "EOF", "HUGE_VAL", "HUGE_VALF", "errno", "assert", "signbit",
      "isnan", "isinf", "isfinite", "exp", "expf", "log", "logf", "log1p", "log1pf", "expm1",
      "expm1f", "sqrt", "sqrtf", "sin", "sinf", "cos", "cosf", "tanh", "tanhf", "erf", "erff",
      "pow", "powf", "floor", "floorf", "ceil", "ceilf", "rint", "rintf", "trunc", "truncf", "fabs",
      "fabsf", "fma", "fmaf", "fmod", "fmodf", "memcpy", "main",
      // the extra intrinsics' libm functions (kiln_prelude.cuh)
      "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10",
      "exp2", "erfc", "lgamma", "lgamma_r", "atan2", "copysign", "hypot"};
  return names;
}

bool is_reserved(const std::string& s) {
  if (reserved_names().count(s)) return true;
  if (s.rfind("kiln_", 0) == 0 || s.rfind("KILN_", 0) == 0 || s.rfind("__", 0) == 0) return true;
  return s.size() > 1 && s[0] == '_' && std::isupper(static_cast<unsigned char>(s[1]));
}

}  // namespace

std::string NameTable::fresh(const std::string& wanted) {
  std::string base;
  for (char c : wanted) {
    base += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || is_reserved(base)) {
    base = "v_" + base;  // never reserved: no keyword or prefix starts so
  }
  std::string name = base;
  for (int i = 2; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
  taken_.insert(name);
  return name;
}

// --------------------------------------------------------------------------- statements

void KernelEmitter::line(const std::string& text) {
  out_.append(size_t(2 * indent_), ' ');
  out_ += text;
  out_ += '\n';
}

void KernelEmitter::not_gpu_code(const std::string& what) const {
  KILN_USER_ERROR("cuda: kernel '" << k_.name << "' cannot be compiled for a GPU: it has " << what
                                   << " (a Kiln limitation: the GPU lowering must not make it)");
}

void KernelEmitter::stmt(const Stmt& s) {
  KILN_INTERNAL_CHECK(s.defined(), "cuda emitter: undefined statement in " << k_.name);
  switch (s->kind) {
    case loop::NodeKind::For:
      return for_loop(s.as<loop::For>());
    case loop::NodeKind::Store:
      return store(s.as<loop::Store>());
    case loop::NodeKind::Block:
      for (const Stmt& c : s.as<loop::Block>()->stmts) stmt(c);
      return;
    case loop::NodeKind::Allocate:
      return allocate(s.as<loop::Allocate>());
    case loop::NodeKind::IfThenElse: {
      const loop::IfThenElse* i = s.as<loop::IfThenElse>();
      line("if (" + unparen(scalar(i->cond)) + ") {");
      ++indent_;
      stmt(i->then_case);
      --indent_;
      if (i->else_case.defined()) {
        line("} else {");
        ++indent_;
        stmt(i->else_case);
        --indent_;
      }
      line("}");
      return;
    }
    case loop::NodeKind::LetStmt: {
      const loop::LetStmt* l = s.as<loop::LetStmt>();
      const std::string& name = l->var.as<loop::Var>()->name;
      Value v = emit(l->value);
      VarInfo info;
      info.lanes = l->value.type().lanes;
      info.data = v.data;
      const DType t = l->value.type().dtype;
      if (info.lanes == 1) {
        info.name = names_.fresh(name);
        line("const " + std::string(register_type(t)) + " " + info.name + " = " +
             unparen(v.lanes[0]) + ";");
      } else {
        info.name = bind_vector(t, v, name);
      }
      with_var(name, info, [&] { stmt(l->body); });
      return;
    }
    case loop::NodeKind::Barrier:
      KILN_INTERNAL_CHECK(in_block_ && !in_thread_, "cuda emitter: kernel "
                                                        << k_.name
                                                        << " has a barrier outside the block "
                                                           "level of its gpu_block loop");
      line("__syncthreads();");
      return;
    case loop::NodeKind::ExternCall:
      if (s.as<loop::ExternCall>()->name == loop::kWarpMmaCall) {
        return warp_mma(s.as<loop::ExternCall>());
      }
      // A CPU cache hint (the CPU schedule inserts it): nothing on the device.
      if (s.as<loop::ExternCall>()->name == loop::kPrefetchCall) return;
      not_gpu_code("an extern call '" + s.as<loop::ExternCall>()->name + "'");
    case loop::NodeKind::IntImm:
    case loop::NodeKind::FloatImm:
    case loop::NodeKind::Var:
    case loop::NodeKind::Cast:
    case loop::NodeKind::Binary:
    case loop::NodeKind::Compare:
    case loop::NodeKind::Not:
    case loop::NodeKind::Select:
    case loop::NodeKind::Load:
    case loop::NodeKind::Ramp:
    case loop::NodeKind::Broadcast:
    case loop::NodeKind::Call:
    case loop::NodeKind::Let:
      break;
  }
  KILN_INTERNAL_CHECK(false,
                      "cuda emitter: not a statement kind " << loop::node_kind_name(s->kind));
}

void KernelEmitter::for_loop(const loop::For* op) {
  const std::string& var = op->var.as<loop::Var>()->name;
  VarInfo info;
  info.name = names_.fresh(var);
  const std::string min = plain(emit(op->min), 0);
  const std::string from = min == "0" ? "" : min + " + ";
  switch (op->for_kind) {
    case ForKind::GpuBlock:
      // The launch's grid is the extent: one block per iteration.
      KILN_INTERNAL_CHECK(!in_block_ && !block_seen_,
                          "cuda emitter: kernel " << k_.name << " has a second gpu_block loop");
      block_seen_ = true;
      line("{");
      ++indent_;
      line("const kiln_i64 " + info.name + " = " + from + "(kiln_i64)blockIdx.x;");
      in_block_ = true;
      with_var(var, info, [&] { stmt(op->body); });
      in_block_ = false;
      --indent_;
      line("}");
      return;
    case ForKind::GpuThread:
      // The launch's block is the extent (the same for every thread loop).
      KILN_INTERNAL_CHECK(in_block_ && !in_thread_, "cuda emitter: kernel "
                                                        << k_.name
                                                        << " has a gpu_thread loop that is not "
                                                           "directly in its gpu_block loop");
      KILN_INTERNAL_CHECK(
          !thread_extent_ || loop::equal(*thread_extent_, op->extent),
          "cuda emitter: kernel " << k_.name << "'s gpu_thread loops differ in extent");
      thread_extent_ = op->extent;
      line("{");
      ++indent_;
      line("const kiln_i64 " + info.name + " = " + from + "(kiln_i64)threadIdx.x;");
      in_thread_ = true;
      with_var(var, info, [&] { stmt(op->body); });
      in_thread_ = false;
      --indent_;
      line("}");
      return;
    case ForKind::Serial:
    case ForKind::Vectorized:  // left by a schedule: runs as a serial loop
    case ForKind::Unrolled:
    case ForKind::Parallel: {  // no thread pool on a GPU: serial, as loop_eval runs it
      // The bound is evaluated once, before the first iteration.
      std::string end = plain(emit(op->extent), 0);
      if (!from.empty()) end = "(" + min + " + " + end + ")";
      end = bind("kiln_i64", end, var + "_end");
      // The schedule decides unrolling: a serial loop stays a loop. Unrolled
      // by NVVM, constant-trip loops (a 60-element row, a 3x3 window) keep
      // every iteration's values live and spill under the launch bounds'
      // register cap.
      line(op->for_kind == ForKind::Unrolled ? "KILN_UNROLL" : "KILN_NO_UNROLL");
      line("for (kiln_i64 " + info.name + " = " + min + "; " + info.name + " < " + end + "; ++" +
           info.name + ") {");
      ++indent_;
      with_var(var, info, [&] { stmt(op->body); });
      --indent_;
      line("}");
      return;
    }
  }
}

void KernelEmitter::store(const loop::Store* op) {
  KILN_INTERNAL_CHECK(!in_block_ || in_thread_,
                      "cuda emitter: kernel " << k_.name << " stores to " << op->buf->name
                                              << " at block level, outside its gpu_thread loops "
                                                 "(every thread would store)");
  const BufInfo& b = buffer(op->buf);
  const int n = op->index.type().lanes;
  if (n == 1) {
    const std::string index = plain(emit(op->index), 0);
    const std::string value = scalar(op->value);
    const std::string s =
        b.name + "[" + unparen(index) + "] = " + unparen(to_memory(b.dtype, value)) + ";";
    line(op->predicate.defined() ? "if (" + unparen(scalar(op->predicate)) + ") " + s : s);
    return;
  }
  // The whole value first (loop_eval evaluates it before writing a lane).
  Value value = emit(op->value);
  if (!op->predicate.defined()) {
    if (std::optional<std::string> base = dense_base(b, op->index)) {
      std::string init;
      for (int k = 0; k < n; ++k)
        init += (k ? ", " : "") + unparen(to_memory(b.dtype, value.lane(k)));
      const std::string args = std::string(memory_type(b.dtype)) + ", " + std::to_string(n);
      std::string name = names_.fresh(b.name + "_st");
      line("const kiln_vec<" + args + "> " + name + " = {{" + init + "}};");
      line("kiln_vstore<" + args + ">(" + b.name + " + " + *base + ", " + name + ");");
      return;
    }
  }
  const std::string vec = bind_vector(b.dtype, value, b.name + "_st");
  Value index = emit(op->index);
  if (contains_load(op->index)) index.lanes = {bind_vector(DType::I64, index, "idx")};
  Value pred;
  if (op->predicate.defined()) pred = emit(op->predicate);
  for (int k = 0; k < n; ++k) {
    std::string i = contains_load(op->index) ? index.lanes[0] + ".v[" + std::to_string(k) + "]"
                                             : plain(index, k);
    std::string s = b.name + "[" + unparen(i) +
                    "] = " + to_memory(b.dtype, vec + ".v[" + std::to_string(k) + "]") + ";";
    line(op->predicate.defined() ? "if (" + unparen(pred.lane(k)) + ") " + s : s);
  }
}

// The warp MMA: the prelude's kiln_mma_m16n8k16_{f16,bf16}(C, A, B, c, a,
// lda, b, ldb, lane), which every lane of the warp reaches together.
void KernelEmitter::warp_mma(const loop::ExternCall* op) {
  KILN_INTERNAL_CHECK(in_thread_ && op->bufs.size() == 3 && op->args.size() == 6,
                      "cuda emitter: kernel " << k_.name << " has a malformed " << op->name);
  const BufInfo &c = buffer(op->bufs[0]), &a = buffer(op->bufs[1]), &b = buffer(op->bufs[2]);
  KILN_INTERNAL_CHECK(c.dtype == DType::F32 && a.dtype == b.dtype &&
                          (a.dtype == DType::F16 || a.dtype == DType::BF16),
                      "cuda emitter: " << op->name << " in kernel " << k_.name
                                       << " multiplies f16 or bf16 into f32");
  std::string call = std::string("kiln_mma_m16n8k16_") + (a.dtype == DType::F16 ? "f16" : "bf16") +
                     "(" + c.name + ", " + a.name + ", " + b.name;
  for (const Expr& e : op->args) call += ", " + unparen(scalar(e));
  line(call + ");");
}

void KernelEmitter::allocate(const loop::Allocate* op) {
  const std::string& name = op->buf->name;
  if (op->scope == loop::MemoryScope::Heap) not_gpu_code("heap scratch '" + name + "'");
  int64_t size = 0;
  if (!loop::is_const_int(op->size, &size)) {
    not_gpu_code("scratch '" + name + "' of a size known only at run time (" +
                 loop::to_string(op->size) + " elements)");
  }
  BufInfo info;
  info.name = names_.fresh(name);
  info.dtype = op->buf->dtype;
  const std::string decl = std::string(memory_type(info.dtype)) + ", " + info.name + ", " +
                           std::to_string(std::max<int64_t>(size, 1));
  switch (op->scope) {
    case loop::MemoryScope::Stack:
      // Per thread. At block level loop IR would share it between the
      // iterations of the thread loops, which GPU threads cannot.
      KILN_INTERNAL_CHECK(!in_block_ || in_thread_, "cuda emitter: kernel "
                                                        << k_.name << " allocates stack scratch "
                                                        << name << " at block level");
      info.vector_access = false;
      line(std::string(memory_type(info.dtype)) + " " + info.name + "[" +
           std::to_string(std::max<int64_t>(size, 1)) + "];");
      break;
    case loop::MemoryScope::GpuShared:
      KILN_INTERNAL_CHECK(in_block_ && !in_thread_,
                          "cuda emitter: kernel " << k_.name << " allocates shared memory " << name
                                                  << " outside the block level of its gpu_block "
                                                     "loop");
      line("KILN_SHARED(" + decl + ");");
      break;
    case loop::MemoryScope::GpuLocal:
      // Per thread, across the barrier phases of a block: every CUDA thread
      // runs the block level, so a local array declared there is its own
      // and outlives each phase (the evaluator offsets it by thread index).
      KILN_INTERNAL_CHECK(in_block_ && !in_thread_,
                          "cuda emitter: kernel " << k_.name << " allocates gpu_local " << name
                                                  << " outside the block level of its gpu_block "
                                                     "loop");
      info.vector_access = false;
      line(std::string(memory_type(info.dtype)) + " " + info.name + "[" +
           std::to_string(std::max<int64_t>(size, 1)) + "];");
      break;
    case loop::MemoryScope::Heap:
      break;  // refused above
  }
  bufs_[op->buf.get()] = info;
  stmt(op->body);
  bufs_.erase(op->buf.get());
}

// --------------------------------------------------------------------------- kernels

namespace {

// The buffers a kernel stores to (the others are const parameters).
std::unordered_set<const loop::BufferNode*> stored_buffers(const Stmt& body) {
  struct Finder : loop::IRVisitor {
    using IRVisitor::visit_node;
    std::unordered_set<const loop::BufferNode*> stored;
    void visit_node(const loop::Store* op) override {
      stored.insert(op->buf.get());
      IRVisitor::visit_node(op);
    }
  } f;
  if (body.defined()) f.visit(body);
  return f.stored;
}

// The extent of the first GpuBlock loop, if any (for the launch comment).
std::optional<Expr> grid_extent(const Stmt& body) {
  struct Finder : loop::IRVisitor {
    using IRVisitor::visit_node;
    std::optional<Expr> grid;
    void visit_node(const loop::For* op) override {
      if (op->for_kind == ForKind::GpuBlock && !grid) grid = op->extent;
      IRVisitor::visit_node(op);
    }
  } f;
  if (body.defined()) f.visit(body);
  return f.grid;
}

}  // namespace

void KernelEmitter::scalar_params() {
  // Declared by emit(); decoded here so each has its register type.
  for (const Expr& s : k_.scalars) {
    const loop::Var* v = s.as<loop::Var>();
    KILN_INTERNAL_CHECK(v, "cuda emitter: a scalar parameter of " << k_.name << " is not a Var");
    VarInfo& info = vars_.at(v->name);
    if (s.type().dtype == DType::I64) continue;
    const std::string& slot = info.slot;
    std::string value;
    switch (s.type().dtype) {
      case DType::F64:
        value = "kiln_slot_f64(" + slot + ")";
        break;
      case DType::F32:
        value = "kiln_slot_f32(" + slot + ")";
        break;
      case DType::F16:
        value = "kiln_slot_f16(" + slot + ")";
        break;
      case DType::BF16:
        value = "kiln_slot_bf16(" + slot + ")";
        break;
      case DType::Bool:
        value = "(" + slot + " != 0)";
        break;
      default:
        value = "(" + std::string(register_type(s.type().dtype)) + ")" + slot;
        break;
    }
    line("const " + std::string(register_type(s.type().dtype)) + " " + info.name + " = " + value +
         ";");
  }
}

std::string KernelEmitter::emit(int64_t* block) {
  const std::unordered_set<const loop::BufferNode*> stored = stored_buffers(k_.body);
  std::vector<std::string> params;
  for (const loop::Buf& b : k_.buffers) {
    KILN_INTERNAL_CHECK(b != nullptr, "cuda emitter: a null buffer parameter of " << k_.name);
    BufInfo info;
    info.name = names_.fresh(b->name);
    info.dtype = b->dtype;
    params.push_back(std::string(stored.count(b.get()) ? "" : "const ") + memory_type(b->dtype) +
                     "* __restrict__ " + info.name);
    bufs_[b.get()] = info;
  }
  for (const Expr& s : k_.scalars) {
    const loop::Var* v = s.as<loop::Var>();
    KILN_INTERNAL_CHECK(v && s.type().lanes == 1, "cuda emitter: a scalar parameter of "
                                                      << k_.name << " is not a scalar Var");
    VarInfo info;
    info.name = names_.fresh(v->name);
    // Shape parameters (i64) are index quantities; anything else is data.
    info.data = s.type().dtype != DType::I64;
    if (info.data) info.slot = names_.fresh(v->name + "_slot");
    params.push_back("kiln_i64 " + (info.data ? info.slot : info.name));
    vars_[v->name] = info;
  }
  // The body first: it finds the block size, which the signature states.
  out_.clear();
  scalar_params();
  if (k_.body.defined()) stmt(k_.body);
  std::string body = std::move(out_);
  int64_t threads = 0;
  if (!block_seen_) {
    threads = 1;  // no GPU loops: launched as one thread
  } else if (!thread_extent_) {
    threads = 1;  // a block loop over block-level code only
  } else if (!loop::is_const_int(*thread_extent_, &threads)) {
    threads = 0;
  }
  *block = threads;
  std::string text;
  if (std::optional<Expr> grid = grid_extent(k_.body)) {
    text += "// " + k_.name + ": grid " + loop::to_string(*grid) + ", block " +
            (thread_extent_ ? loop::to_string(*thread_extent_) : std::string("1")) + "\n";
  } else {
    text += "// " + k_.name + ": one thread\n";
  }
  text += "extern \"C\" __global__ void ";
  // At least one block per multiprocessor, nothing more: given only the
  // block size, ptxas aims at full occupancy and caps registers (32 for 256
  // threads), which spills reductions and convolutions.
  if (threads > 0) text += "__launch_bounds__(" + std::to_string(threads) + ", 1) ";
  text += symbol_ + "(";
  for (size_t i = 0; i < params.size(); ++i) text += (i ? ", " : "") + params[i];
  text += ") {\n" + body + "}\n";
  return text;
}

std::string CudaProgram::source() const {
  return std::string("#include \"") + kPreludeHeader + "\"\n\n" + kernels;
}

CudaProgram emit_cuda(const std::vector<loop::Kernel>& kernels) {
  CudaProgram p;
  NameTable symbols;
  for (const loop::Kernel& k : kernels) {
    EmittedKernel e;
    e.name = k.name;
    e.symbol = symbols.fresh(k.name);
    KernelEmitter emitter(k, e.symbol);
    if (!p.kernels.empty()) p.kernels += "\n";
    p.kernels += emitter.emit(&e.block);
    p.entries.push_back(std::move(e));
  }
  return p;
}

}  // namespace kiln::codegen::cuda
