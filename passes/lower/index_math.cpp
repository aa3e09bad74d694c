// Index math and small value helpers shared by the per-op lowerings, plus the
// per-kernel LowerContext. Index expressions are built plainly (i * s0 + j * s1)
// and left to loop::simplify to fold constants.
#include <limits>

#include "ir/loop/simplify.h"
#include "passes/lower/lower_internal.h"

namespace kiln::passes::lower {

using namespace kiln::loop;  // NOLINT: the loop IR shorthands read best unqualified

// --- operands ----------------------------------------------------------------------------

Operand tensor_operand(DType dtype, std::vector<Expr> dims, std::function<Expr(const Index&)> at,
                       ir::Type type) {
  Operand o;
  o.kind = Operand::Kind::Tensor;
  o.dtype = dtype;
  o.dims = std::move(dims);
  o.at = std::move(at);
  o.type = std::move(type);
  return o;
}

Operand scalar_operand(Expr value, ir::Type type) {
  Operand o;
  o.kind = Operand::Kind::Scalar;
  o.dtype = value.type().dtype;
  o.scalar = std::move(value);
  o.type = std::move(type);
  return o;
}

Expr Operand::broadcast_at(const Index& out_index) const {
  KILN_INTERNAL_CHECK(kind != Kind::None, "broadcast_at of an absent operand");
  if (kind == Kind::Scalar) return scalar;
  KILN_INTERNAL_CHECK(dims.size() <= out_index.size(),
                      "operand rank " << dims.size() << " above output rank " << out_index.size());
  Index idx;
  const size_t lead = out_index.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t size = 0;
    idx.push_back(is_const_int(dims[d], &size) && size == 1 ? make_int(0) : out_index[lead + d]);
  }
  return at(idx);
}

// --- context -----------------------------------------------------------------------------

std::string LowerContext::fresh(const std::string& prefix) {
  int n = counters_[prefix]++;
  return prefix + std::to_string(n);
}

loop::Buf LowerContext::scratch_buf(const std::string& prefix, DType dtype) {
  // Never a buffer parameter's name: a graph value without a name of its own
  // is buffer "v1", and scratch named "v1" would shadow it.
  for (;;) {
    std::string name = fresh(prefix);
    if (!taken(name)) {
      scratch_names_.insert(name);
      return loop::make_buf(name, dtype);
    }
  }
}

bool LowerContext::taken(const std::string& name) const {
  for (const BufferParam& b : buffers_) {
    if (b.buf->name == name) return true;
  }
  for (const ScalarParam& s : scalars_) {
    if (s.var.as<Var>()->name == name) return true;
  }
  return false;
}

Expr LowerContext::dim(const ir::Dim& d) {
  if (d.is_static()) return make_int(d.value);
  for (const ScalarParam& s : scalars_) {
    if (s.role == ScalarRole::SymbolicDim && s.symbol == d.symbol) return s.var;
  }
  ScalarParam p;
  p.var = Var::make(i64_t(), d.symbol);
  p.role = ScalarRole::SymbolicDim;
  p.symbol = d.symbol;
  scalars_.push_back(p);
  return p.var;
}

std::vector<Expr> LowerContext::dims(const ir::Dims& d) {
  std::vector<Expr> out;
  for (const ir::Dim& x : d) out.push_back(dim(x));
  return out;
}

std::string LowerContext::unique_buffer_name(const std::string& base) {
  std::string name = base.empty() ? "buf" : base;
  auto used = [&](const std::string& n) { return taken(n) || scratch_names_.count(n) > 0; };
  if (!used(name)) return name;
  for (int i = 1;; ++i) {
    std::string n = name + "_" + std::to_string(i);
    if (!used(n)) return n;
  }
}

int LowerContext::add_buffer(const ir::Value* v, BufferRole role, const std::string& name,
                             DType dtype, std::vector<Expr> shape, bool strided) {
  BufferParam p;
  p.buf = make_buf(unique_buffer_name(name), dtype);
  p.role = role;
  p.value = v;
  p.shape = std::move(shape);
  p.strided = strided;
  buffers_.push_back(std::move(p));
  return static_cast<int>(buffers_.size()) - 1;
}

int LowerContext::add_constant(const Tensor& t, const std::string& name) {
  Tensor packed = t.contiguous();
  std::vector<Expr> shape;
  for (int64_t s : packed.sizes()) shape.push_back(make_int(s));
  int i = add_buffer(nullptr, BufferRole::Constant, name, packed.dtype(), shape, false);
  buffers_[size_t(i)].constant = packed;
  return i;
}

Expr LowerContext::stride_param(int buffer, int dim) {
  for (const ScalarParam& s : scalars_) {
    if (s.role == ScalarRole::Stride && s.buffer == buffer && s.dim == dim) return s.var;
  }
  ScalarParam p;
  p.var = Var::make(i64_t(), unique_buffer_name(buffers_.at(size_t(buffer)).buf->name + "_s" +
                                                std::to_string(dim)));
  p.role = ScalarRole::Stride;
  p.buffer = buffer;
  p.dim = dim;
  scalars_.push_back(p);
  return p.var;
}

Expr LowerContext::scalar_param(const ir::Value* v, const std::string& name, DType dtype) {
  for (const ScalarParam& s : scalars_) {
    if (s.role == ScalarRole::Value && s.value == v) return s.var;
  }
  ScalarParam p;
  p.var = Var::make({dtype, 1}, unique_buffer_name(name));
  p.role = ScalarRole::Value;
  p.value = v;
  scalars_.push_back(p);
  return p.var;
}

Expr LowerContext::start_index(const ir::Node& n, const std::string& name, int64_t value) {
  if (!offset_nodes_.count(&n)) return make_int(value);
  ScalarParam p;
  p.var = Var::make(i64_t(), unique_buffer_name(name));
  p.role = ScalarRole::Offset;
  p.offset = value;
  scalars_.push_back(p);
  return p.var;
}

// --- index math --------------------------------------------------------------------------

Expr product(const std::vector<Expr>& dims) {
  Expr p = make_int(1);
  for (const Expr& d : dims) p = p * d;
  return simplify(p);
}

std::vector<Expr> packed_strides(const std::vector<Expr>& dims) {
  std::vector<Expr> strides(dims.size());
  Expr s = make_int(1);
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = s;
    s = simplify(s * dims[d]);
  }
  return strides;
}

Expr offset_of(const Index& index, const std::vector<Expr>& strides) {
  KILN_INTERNAL_CHECK(index.size() == strides.size(),
                      "index rank " << index.size() << " vs " << strides.size() << " strides");
  Expr off = make_int(0);
  for (size_t d = 0; d < index.size(); ++d) off = off + index[d] * strides[d];
  return simplify(off);
}

Expr flat_index(const Index& index, const std::vector<Expr>& dims) {
  return offset_of(index, packed_strides(dims));
}

Index unflatten(const Expr& flat, const std::vector<Expr>& dims) {
  Index idx(dims.size());
  Expr rest = flat;
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = simplify(rest % dims[d]);
      rest = simplify(rest / dims[d]);
    }
  }
  return idx;
}

Stmt loop_nest(LowerContext& ctx, const std::vector<Expr>& dims,
               const std::function<Stmt(const Index&)>& body, const std::string& prefix) {
  Index idx;
  for (size_t d = 0; d < dims.size(); ++d) idx.push_back(ctx.loop_var(prefix));
  Stmt s = body(idx);
  for (size_t d = dims.size(); d-- > 0;) {
    s = For::make(idx[d], make_int(0), dims[d], ForKind::Serial, s);
  }
  return s;
}

Stmt store_at(const OutBuf& out, const Index& index, const Expr& value) {
  KILN_INTERNAL_CHECK(!out.pool, "store_at: a root given a folded pool stores whole windows");
  if (out.epilogue) return out.epilogue(index, value);
  return Store::make(out.buf, flat_index(index, out.dims), cast_to(value, out.buf->dtype));
}

Stmt store_all(LowerContext& ctx, const OutBuf& out, const std::function<Expr(const Index&)>& op) {
  return loop_nest(ctx, out.dims, [&](const Index& idx) { return store_at(out, idx, op(idx)); });
}

Expr Scratch::load() const {
  return Load::make(buf, make_int(0));
}
Stmt Scratch::store(const Expr& v) const {
  return Store::make(buf, make_int(0), cast_to(v, buf->dtype));
}

Scratch make_scratch(LowerContext& ctx, const std::string& prefix, DType dtype) {
  return Scratch{ctx.scratch_buf(prefix, dtype)};
}

Stmt allocate(const std::vector<Scratch>& scratch, Stmt body) {
  for (size_t i = scratch.size(); i-- > 0;) {
    body = Allocate::make(scratch[i].buf, make_int(1), MemoryScope::Stack, body);
  }
  return body;
}

// --- values ------------------------------------------------------------------------------

Expr cast_to(const Expr& e, DType t) {
  if (e.type().dtype == t) return e;
  return Cast::make({t, e.type().lanes}, e);
}

Expr imm(DType t, double v) {
  if (is_floating(t)) return FloatImm::make({t, 1}, v);
  if (t == DType::Bool) return IntImm::make({t, 1}, v != 0);
  return IntImm::make({t, 1}, static_cast<int64_t>(v));
}

Expr imm_int(DType t, int64_t v) {
  if (is_floating(t)) return FloatImm::make({t, 1}, static_cast<double>(v));
  if (t == DType::Bool) return IntImm::make({t, 1}, v != 0);
  return IntImm::make({t, 1}, v);
}

Expr call(const std::string& name, std::vector<Expr> args) {
  VType t = args.at(0).type();
  return Call::make(t, name, std::move(args));
}

Expr is_nan(const Expr& x) {
  if (!is_floating(x.type().dtype)) return make_const(bool_t(x.type().lanes), 0);
  return Call::make(bool_t(x.type().lanes), "isnan", {x});
}

Expr lowest(DType t) {
  switch (t) {
    case DType::Bool:
      return imm_int(t, 0);
    case DType::I8:
      return imm_int(t, -128);
    case DType::U8:
      return imm_int(t, 0);
    case DType::I16:
      return imm_int(t, -32768);
    case DType::I32:
      return imm_int(t, std::numeric_limits<int32_t>::min());
    case DType::I64:
      return imm_int(t, std::numeric_limits<int64_t>::min());
    default:
      return imm(t, -std::numeric_limits<double>::infinity());
  }
}

Expr highest(DType t) {
  switch (t) {
    case DType::Bool:
      return imm_int(t, 1);
    case DType::I8:
      return imm_int(t, 127);
    case DType::U8:
      return imm_int(t, 255);
    case DType::I16:
      return imm_int(t, 32767);
    case DType::I32:
      return imm_int(t, std::numeric_limits<int32_t>::max());
    case DType::I64:
      return imm_int(t, std::numeric_limits<int64_t>::max());
    default:
      return imm(t, std::numeric_limits<double>::infinity());
  }
}

DType accum_dtype(DType t) {
  if (t == DType::F64) return DType::F64;
  if (is_floating(t)) return DType::F32;
  return DType::I64;
}

void unsupported(const NodeLowering& n, const std::string& what) {
  KILN_USER_ERROR("lower: " << n.op() << ": " << what);
}

}  // namespace kiln::passes::lower
