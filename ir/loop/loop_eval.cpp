// loop_eval: see loop_eval.h. Values are vectors of lanes, each lane an int64
// (integral and bool dtypes, kept sign- or zero-extended to their width) or a
// double (floating dtypes, holding a value already rounded to the dtype).
#include "ir/loop/loop_eval.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "ir/loop/analysis.h"
#include "ir/loop/extra_math.h"
#include "ir/loop/prefetch.h"
#include "ir/loop/warp.h"
#include "ir/loop/warp_mma.h"
#include "kiln/element.h"
#include "kiln/error.h"
#include "runtime/kernel_status.h"

namespace kiln::loop {

namespace {

union Lane {
  int64_t i;
  double f;
};

struct Val {
  VType type;
  std::vector<Lane> lanes;

  int n() const { return type.lanes; }
  bool floating() const { return is_floating(type.dtype); }
};

// --- rounding into a dtype ---------------------------------------------------------------

double round_float(DType t, double v) {
  switch (t) {
    case DType::F64:
      return v;
    case DType::F32:
      return static_cast<double>(static_cast<float>(v));
    case DType::F16:
      return half_to_float(float_to_half(static_cast<float>(v)));
    case DType::BF16:
      return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    default:
      KILN_INTERNAL_CHECK(false, "loop_eval: round_float to " << dtype_name(t));
  }
}

int64_t wrap_int(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v != 0;
    case DType::I8:
      return static_cast<int8_t>(v);
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::I16:
      return static_cast<int16_t>(v);
    case DType::I32:
      return static_cast<int32_t>(v);
    case DType::I64:
      return v;
    default:
      KILN_INTERNAL_CHECK(false, "loop_eval: wrap_int to " << dtype_name(t));
  }
}

int64_t saturate_to_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// f32/f16/bf16 arithmetic runs in float; f64 in double.
bool in_float(DType t) {
  return t != DType::F64;
}

Lane cast_lane(Lane x, DType from, DType to) {
  Lane r;
  if (from == to) return x;
  if (to == DType::Bool) {
    r.i = is_floating(from) ? (x.f != 0.0 || std::isnan(x.f)) : (x.i != 0);
    return r;
  }
  if (is_floating(from) && is_floating(to)) {
    if (from == DType::F64 && to == DType::F16) {
      r.f = half_to_float(double_to_half(x.f));
    } else if (from == DType::F64 && to == DType::BF16) {
      r.f = bf16_to_float(double_to_bf16(x.f));
    } else {
      r.f = round_float(to, x.f);
    }
    return r;
  }
  if (is_floating(from)) {
    r.i = wrap_int(to, saturate_to_i64(x.f));
    return r;
  }
  if (is_floating(to)) {
    if (to == DType::F32) {
      r.f = static_cast<double>(static_cast<float>(x.i));
    } else if (to == DType::F64) {
      r.f = static_cast<double>(x.i);
    } else {
      // One rounding, as kiln::store_int does (via double would round twice
      // for |x| > 2^53).
      uint16_t h = 0;
      store_int(to, &h, x.i);
      r.f = load_as_double(to, &h);
    }
    return r;
  }
  r.i = wrap_int(to, x.i);
  return r;
}

// --- scalar arithmetic -------------------------------------------------------------------

// x / 0 and x % 0 give 0 here; Evaluator::eval_binary reports them.
int64_t int_divmod(BinOp op, int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return op == BinOp::Div ? static_cast<int64_t>(0 - static_cast<uint64_t>(a)) : 0;
  int64_t q = a / b, r = a % b;
  bool fix = r != 0 && ((r < 0) != (b < 0));
  return op == BinOp::Div ? q - fix : r + (fix ? b : 0);
}

int64_t int_binary(BinOp op, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinOp::Add:
      return static_cast<int64_t>(ua + ub);
    case BinOp::Sub:
      return static_cast<int64_t>(ua - ub);
    case BinOp::Mul:
      return static_cast<int64_t>(ua * ub);
    case BinOp::Div:
    case BinOp::Mod:
      return int_divmod(op, a, b);
    case BinOp::Min:
      return std::min(a, b);
    case BinOp::Max:
      return std::max(a, b);
    case BinOp::And:
    case BinOp::BitAnd:
      return a & b;
    case BinOp::Or:
    case BinOp::BitOr:
      return a | b;
    case BinOp::BitXor:
      return a ^ b;
  }
  return 0;
}

template <typename T>
T float_binary_t(BinOp op, T a, T b) {
  switch (op) {
    case BinOp::Add:
      return a + b;
    case BinOp::Sub:
      return a - b;
    case BinOp::Mul:
      return a * b;
    case BinOp::Div:
      return a / b;
    case BinOp::Mod: {
      T m = std::fmod(a, b);
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      return m;
    }
    case BinOp::Min:
    case BinOp::Max: {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      bool want_max = op == BinOp::Max;
      if (a == b) return (std::signbit(a) == want_max) ? b : a;  // -0 < +0
      return want_max ? std::max(a, b) : std::min(a, b);
    }
    default:
      KILN_INTERNAL_CHECK(false, "loop_eval: " << binop_name(op) << " on floats");
  }
}

double float_binary(BinOp op, DType t, double a, double b) {
  double r = in_float(t) ? float_binary_t<float>(op, float(a), float(b)) : float_binary_t(op, a, b);
  return round_float(t, r);
}

template <typename T>
bool compare_t(CmpOp op, T a, T b) {
  switch (op) {
    case CmpOp::EQ:
      return a == b;
    case CmpOp::NE:
      return a != b;
    case CmpOp::LT:
      return a < b;
    case CmpOp::LE:
      return a <= b;
    case CmpOp::GT:
      return a > b;
    case CmpOp::GE:
      return a >= b;
  }
  return false;
}

template <typename T>
T call_float_t(const std::string& name, const std::vector<T>& a) {
  T x = a[0];
  if (name == "exp") return std::exp(x);
  if (name == "log") return std::log(x);
  if (name == "log1p") return std::log1p(x);
  if (name == "expm1") return std::expm1(x);
  if (name == "sqrt") return std::sqrt(x);
  if (name == "rsqrt") return T(1) / std::sqrt(x);
  if (name == "sin") return std::sin(x);
  if (name == "cos") return std::cos(x);
  if (name == "tanh") return std::tanh(x);
  if (name == "sigmoid") return T(1) / (T(1) + std::exp(-x));
  if (name == "erf") return std::erf(x);
  if (name == "floor") return std::floor(x);
  if (name == "ceil") return std::ceil(x);
  if (name == "round") return std::nearbyint(x);  // default rounding mode: half to even
  if (name == "trunc") return std::trunc(x);
  if (name == "abs") return std::fabs(x);
  if (name == "pow" && a.size() == 2) return std::pow(x, a[1]);
  if (name == "fma" && a.size() == 3) return std::fma(x, a[1], a[2]);
  // The extra intrinsics compute in double and round once, as every backend does.
  if (const ExtraMath* m = find_extra_math(name); m && size_t(m->arity) == a.size()) {
    return T(m->arity == 1 ? m->f1(double(x)) : m->f2(double(x), double(a[1])));
  }
  KILN_INTERNAL_CHECK(false, "loop_eval: unknown call " << name << " with " << a.size() << " args");
}

// --- buffers -----------------------------------------------------------------------------

struct BoundBuffer {
  char* data = nullptr;  // element 0
  DType dtype = DType::F32;
  int64_t lo = 0, hi = 0;  // valid element offsets [lo, hi)
  std::string name;
  // GpuLocal: `hi` elements per GPU thread, thread k's at element k * hi of
  // this storage, which grows as threads first touch it (data is unused).
  std::shared_ptr<std::vector<char>> per_thread;
};

BoundBuffer bind_tensor(const BufferNode& b, const Tensor& t) {
  KILN_USER_CHECK(t.defined(),
                  "loop_eval: buffer '" << b.name << "' is bound to an undefined tensor");
  KILN_USER_CHECK(t.dtype() == b.dtype, "loop_eval: buffer '"
                                            << b.name << "' is " << dtype_name(b.dtype)
                                            << " but the tensor is " << dtype_name(t.dtype()));
  // The evaluator is the host's processor and, for GPU-mapped kernels, the
  // sim device's (whose memory is host memory underneath); real GPU memory
  // it cannot reach.
  KILN_USER_CHECK(t.device().is_cpu() || t.device().kind == Device::Kind::Sim,
                  "loop_eval: buffer '" << b.name << "' is on " << t.device().str()
                                        << ", which the loop evaluator cannot reach");
  BoundBuffer bb;
  bb.data = static_cast<char*>(t.data_ptr());
  bb.dtype = t.dtype();
  const int64_t esize = static_cast<int64_t>(dtype_size(t.dtype()));
  bb.lo = -t.storage_offset();
  bb.hi = static_cast<int64_t>(t.storage()->nbytes()) / esize - t.storage_offset();
  bb.name = b.name;
  return bb;
}

// Where element i of `b` is, for the GPU thread `thread` (-1: outside any
// gpu_thread loop), after the bounds check of a `what` ("load", "store").
char* element_at(const BoundBuffer& b, int64_t i, int64_t thread, const char* what) {
  KILN_INTERNAL_CHECK(i >= b.lo && i < b.hi, "loop_eval: " << what << " " << b.name << "[" << i
                                                           << "] out of bounds [" << b.lo << ", "
                                                           << b.hi << ")");
  const int64_t esize = static_cast<int64_t>(dtype_size(b.dtype));
  if (!b.per_thread) return b.data + i * esize;
  KILN_INTERNAL_CHECK(thread >= 0, "loop_eval: " << what << " of GPU per-thread buffer " << b.name
                                                 << " outside any gpu_thread loop");
  const size_t end = size_t((thread + 1) * b.hi * esize);
  if (b.per_thread->size() < end) b.per_thread->resize(end, 0);
  return b.per_thread->data() + (thread * b.hi + i) * esize;
}

Lane read_lane(const BoundBuffer& b, int64_t i, int64_t thread) {
  const char* p = element_at(b, i, thread, "load");
  Lane r;
  if (is_floating(b.dtype)) {
    r.f = load_as_double(b.dtype, p);
  } else {
    r.i = load_as_int(b.dtype, p);
  }
  return r;
}

void write_lane(const BoundBuffer& b, int64_t i, Lane v, int64_t thread) {
  char* p = element_at(b, i, thread, "store");
  if (is_floating(b.dtype)) {
    store_double(b.dtype, p, v.f);
  } else {
    store_int(b.dtype, p, v.i);
  }
}

// --- the evaluator -----------------------------------------------------------------------

class Evaluator {
 public:
  std::unordered_map<const BufferNode*, BoundBuffer> buffers;
  std::unordered_map<std::string, Val> vars;
  // The iteration of the innermost enclosing gpu_thread loop (the thread whose
  // GpuLocal copies accesses see), or -1 outside any.
  int64_t thread_ = -1;
  // Bits of runtime/kernel_status.h, raised after the run like compiled code.
  int32_t status = 0;
  // The predicate of the store whose value is being evaluated, if any.
  const Val* store_mask_ = nullptr;

  void bind_var(const std::string& name, Val v) { vars[name] = std::move(v); }

  Val eval(const Expr& e);
  void exec(const Stmt& s);

 private:
  // Binds `name` to `v` for the duration of `f`, restoring any outer binding.
  template <typename F>
  void scoped(const std::string& name, Val v, F&& f) {
    std::optional<Val> saved;
    if (auto it = vars.find(name); it != vars.end()) saved = it->second;
    vars[name] = std::move(v);
    f();
    if (saved) {
      vars[name] = std::move(*saved);
    } else {
      vars.erase(name);
    }
  }

  const BoundBuffer& buffer(const Buf& b) {
    auto it = buffers.find(b.get());
    KILN_INTERNAL_CHECK(it != buffers.end(), "loop_eval: buffer " << b->name << " is not bound");
    return it->second;
  }

  static Val make(VType t) { return Val{t, std::vector<Lane>(size_t(t.lanes))}; }
  // Lane k of v, where a scalar stands for all lanes.
  static Lane lane(const Val& v, int k) { return v.lanes[v.n() == 1 ? 0 : size_t(k)]; }

  Val eval_binary(const Binary* op);
  // Whether lane k of a division by zero is live: not masked off by the
  // enclosing store's predicate or by a predicate of the divisor's loads.
  bool division_lane_live(const Binary* op, int k);
  Val eval_compare(const Compare* op);
  void exec_warp_mma(const ExternCall* op);
  Val eval_call(const Call* op);
  Val eval_checked_index(const Call* op, const std::vector<Val>& args);
  Val eval_warp_reduce(const Call* op, BinOp combine);
  Val eval_load(const Load* op);
  void exec_store(const Store* op);
};

bool Evaluator::division_lane_live(const Binary* op, int k) {
  if (store_mask_ && store_mask_->n() == op->type.lanes && !lane(*store_mask_, k).i) return false;
  for (const Expr& p : load_predicates(op->b)) {
    if (!lane(eval(p), k).i) return false;
  }
  return true;
}

Val Evaluator::eval_binary(const Binary* op) {
  Val a = eval(op->a), b = eval(op->b);
  Val r = make(op->type);
  DType t = op->type.dtype;
  bool divides = !is_floating(t) && (op->op == BinOp::Div || op->op == BinOp::Mod);
  for (int k = 0; k < r.n(); ++k) {
    Lane x = lane(a, k), y = lane(b, k);
    if (is_floating(t)) {
      r.lanes[size_t(k)].f = float_binary(op->op, t, x.f, y.f);
    } else {
      r.lanes[size_t(k)].i = wrap_int(t, int_binary(op->op, x.i, y.i));
      if (divides && y.i == 0 && division_lane_live(op, k)) {
        status |=
            op->op == BinOp::Div ? runtime::kStatusIntDivByZero : runtime::kStatusIntModByZero;
      }
    }
  }
  return r;
}

Val Evaluator::eval_compare(const Compare* op) {
  Val a = eval(op->a), b = eval(op->b);
  Val r = make(op->type);
  bool fl = a.floating();
  for (int k = 0; k < r.n(); ++k) {
    Lane x = lane(a, k), y = lane(b, k);
    r.lanes[size_t(k)].i = fl ? compare_t(op->op, x.f, y.f) : compare_t(op->op, x.i, y.i);
  }
  return r;
}

// checked_index(i, n): i when 0 <= i < n, else 0 with the status bit (in a live lane).
Val Evaluator::eval_checked_index(const Call* op, const std::vector<Val>& args) {
  Val r = make(op->type);
  for (int k = 0; k < r.n(); ++k) {
    int64_t i = lane(args[0], k).i, n = lane(args[1], k).i;
    bool ok = i >= 0 && i < n;
    r.lanes[size_t(k)].i = ok ? i : 0;
    if (ok) continue;
    bool live = !(store_mask_ && store_mask_->n() == op->type.lanes && !lane(*store_mask_, k).i);
    for (const Expr& p : load_predicates(op->args[0])) live = live && lane(eval(p), k).i;
    if (live) status |= runtime::kStatusIndexOutOfRange;
  }
  return r;
}

// warp_reduce_<op>(buf[i], W) (ir/loop/warp.h): the butterfly over the copies
// of buf[i] of this thread's group of W, which earlier thread loops stored.
Val Evaluator::eval_warp_reduce(const Call* op, BinOp combine) {
  const Load* l = op->args.size() == 2 ? op->args[0].as<Load>() : nullptr;
  int64_t width = 0;
  KILN_INTERNAL_CHECK(l && !l->predicate.defined() && is_const_int(op->args[1], &width) &&
                          width >= 1 && op->type.lanes == 1,
                      "loop_eval: malformed " << op->name);
  const BoundBuffer& b = buffer(l->buf);
  KILN_INTERNAL_CHECK(b.per_thread && thread_ >= 0,
                      "loop_eval: " << op->name << " of " << b.name
                                    << ", not a GPU per-thread buffer in a gpu_thread loop");
  const int64_t i = eval(l->index).lanes[0].i;
  const int64_t base = thread_ - thread_ % width;
  std::vector<Lane> v;
  for (int64_t t = 0; t < width; ++t) v.push_back(read_lane(b, i, base + t));
  const DType dt = op->type.dtype;
  for (int64_t s = width / 2; s >= 1; s /= 2) {
    std::vector<Lane> next(v.size());
    for (size_t t = 0; t < v.size(); ++t) {
      const Lane x = v[t], y = v[t ^ size_t(s)];
      if (is_floating(dt)) {
        next[t].f = float_binary(combine, dt, x.f, y.f);
      } else {
        next[t].i = wrap_int(dt, int_binary(combine, x.i, y.i));
      }
    }
    v = std::move(next);
  }
  Val r = make(op->type);
  r.lanes[0] = v[size_t(thread_ - base)];
  return r;
}

Val Evaluator::eval_call(const Call* op) {
  if (std::optional<BinOp> w = warp_reduce_op(op->name)) return eval_warp_reduce(op, *w);
  // A streaming-store hint (passes/schedule/stream_stores.cpp): the value itself.
  if (op->name == "stream" && !op->args.empty()) return eval(op->args[0]);
  std::vector<Val> args;
  for (const Expr& a : op->args) args.push_back(eval(a));
  KILN_INTERNAL_CHECK(!args.empty(), "loop_eval: call " << op->name << " without arguments");
  Val r = make(op->type);
  if (op->name == "checked_index") return eval_checked_index(op, args);
  DType at = op->args[0].type().dtype;
  for (int k = 0; k < r.n(); ++k) {
    Lane& out = r.lanes[size_t(k)];
    if (op->name == "isnan") {
      out.i = is_floating(at) && std::isnan(lane(args[0], k).f);
      continue;
    }
    if (!is_floating(at)) {
      int64_t x = lane(args[0], k).i;
      if (op->name == "abs") {
        out.i = wrap_int(at, x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x);
      } else if (op->name == "floor" || op->name == "ceil" || op->name == "round" ||
                 op->name == "trunc") {
        out.i = x;
      } else {
        KILN_INTERNAL_CHECK(false,
                            "loop_eval: " << op->name << " of integer type " << dtype_name(at));
      }
      continue;
    }
    if (in_float(at)) {
      std::vector<float> xs;
      for (const Val& v : args) xs.push_back(static_cast<float>(lane(v, k).f));
      out.f = round_float(op->type.dtype, call_float_t<float>(op->name, xs));
    } else {
      std::vector<double> xs;
      for (const Val& v : args) xs.push_back(lane(v, k).f);
      out.f = call_float_t<double>(op->name, xs);
    }
  }
  return r;
}

Val Evaluator::eval_load(const Load* op) {
  const BoundBuffer& b = buffer(op->buf);
  Val idx = eval(op->index);
  Val pred;
  if (op->predicate.defined()) pred = eval(op->predicate);
  Val r = make(op->type);
  for (int k = 0; k < r.n(); ++k) {
    if (op->predicate.defined() && !lane(pred, k).i) {
      r.lanes[size_t(k)].i = 0;
      if (r.floating()) r.lanes[size_t(k)].f = 0.0;
      continue;
    }
    r.lanes[size_t(k)] = read_lane(b, lane(idx, k).i, thread_);
  }
  return r;
}

Val Evaluator::eval(const Expr& e) {
  KILN_INTERNAL_CHECK(e.defined(), "loop_eval: undefined expression");
  switch (e->kind) {
    case NodeKind::IntImm: {
      Val r = make(e.type());
      r.lanes[0].i = wrap_int(e.type().dtype, e.as<IntImm>()->value);
      return r;
    }
    case NodeKind::FloatImm: {
      Val r = make(e.type());
      r.lanes[0].f = round_float(e.type().dtype, e.as<FloatImm>()->value);
      return r;
    }
    case NodeKind::Var: {
      const Var* v = e.as<Var>();
      auto it = vars.find(v->name);
      KILN_INTERNAL_CHECK(it != vars.end(), "loop_eval: unbound variable " << v->name);
      return it->second;
    }
    case NodeKind::Cast: {
      const Cast* c = e.as<Cast>();
      Val x = eval(c->value);
      Val r = make(c->type);
      for (int k = 0; k < r.n(); ++k) {
        r.lanes[size_t(k)] = cast_lane(lane(x, k), x.type.dtype, c->type.dtype);
      }
      return r;
    }
    case NodeKind::Binary:
      return eval_binary(e.as<Binary>());
    case NodeKind::Compare:
      return eval_compare(e.as<Compare>());
    case NodeKind::Not: {
      Val x = eval(e.as<Not>()->a);
      for (Lane& l : x.lanes) l.i = !l.i;
      return x;
    }
    case NodeKind::Select: {
      const Select* s = e.as<Select>();
      Val c = eval(s->cond), t = eval(s->true_value), f = eval(s->false_value);
      Val r = make(s->type);
      for (int k = 0; k < r.n(); ++k) r.lanes[size_t(k)] = lane(c, k).i ? lane(t, k) : lane(f, k);
      return r;
    }
    case NodeKind::Load:
      return eval_load(e.as<Load>());
    case NodeKind::Ramp: {
      const Ramp* rp = e.as<Ramp>();
      Val base = eval(rp->base), stride = eval(rp->stride);
      Val r = make(rp->type);
      for (int k = 0; k < r.n(); ++k) {
        if (r.floating()) {
          r.lanes[size_t(k)].f = round_float(r.type.dtype, base.lanes[0].f + k * stride.lanes[0].f);
        } else {
          r.lanes[size_t(k)].i =
              wrap_int(r.type.dtype, int_binary(BinOp::Add, base.lanes[0].i,
                                                int_binary(BinOp::Mul, k, stride.lanes[0].i)));
        }
      }
      return r;
    }
    case NodeKind::Broadcast: {
      const Broadcast* b = e.as<Broadcast>();
      Val x = eval(b->value);
      Val r = make(b->type);
      for (Lane& l : r.lanes) l = x.lanes[0];
      return r;
    }
    case NodeKind::Call:
      return eval_call(e.as<Call>());
    case NodeKind::Let: {
      const Let* l = e.as<Let>();
      Val result;
      scoped(l->var.as<Var>()->name, eval(l->value), [&] { result = eval(l->body); });
      return result;
    }
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "loop_eval: not an expression kind " << node_kind_name(e->kind));
}

void Evaluator::exec_store(const Store* op) {
  const BoundBuffer& b = buffer(op->buf);
  Val idx = eval(op->index);
  Val pred;
  if (op->predicate.defined()) pred = eval(op->predicate);
  const Val* outer_mask = store_mask_;
  if (op->predicate.defined()) store_mask_ = &pred;
  Val v = eval(op->value);
  store_mask_ = outer_mask;
  for (int k = 0; k < idx.n(); ++k) {
    if (op->predicate.defined() && !lane(pred, k).i) continue;
    write_lane(b, lane(idx, k).i, lane(v, k), thread_);
  }
}

// One lane's part of the warp MMA (ir/loop/warp_mma.h): its four elements
// of C, each a sum over k in f32 of exact products.
void Evaluator::exec_warp_mma(const ExternCall* op) {
  KILN_INTERNAL_CHECK(op->bufs.size() == 3 && op->args.size() == 6,
                      "loop_eval: " << op->name << " takes 3 buffers and 6 scalars");
  const BoundBuffer &c = buffer(op->bufs[0]), &a = buffer(op->bufs[1]), &b = buffer(op->bufs[2]);
  KILN_INTERNAL_CHECK(c.dtype == DType::F32 && a.dtype == b.dtype &&
                          (a.dtype == DType::F16 || a.dtype == DType::BF16),
                      "loop_eval: " << op->name << " multiplies f16 or bf16 into f32");
  int64_t arg[6];
  for (size_t i = 0; i < 6; ++i) arg[i] = eval(op->args[i]).lanes[0].i;
  const int64_t c0 = arg[0], a0 = arg[1], lda = arg[2], b0 = arg[3], ldb = arg[4], ln = arg[5];
  KILN_INTERNAL_CHECK(ln >= 0 && ln < 32, "loop_eval: " << op->name << " of lane " << ln);
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t row = ln / 4 + 8 * (r / 2), col = 2 * (ln % 4) + r % 2;
    float sum = static_cast<float>(read_lane(c, c0 + r, thread_).f);
    for (int64_t k = 0; k < kWarpMmaK; ++k) {
      const double x = read_lane(a, a0 + row * lda + k, thread_).f;
      const double y = read_lane(b, b0 + col * ldb + k, thread_).f;
      sum += static_cast<float>(x * y);
    }
    write_lane(c, c0 + r, Lane{.f = sum}, thread_);
  }
}

void Evaluator::exec(const Stmt& s) {
  KILN_INTERNAL_CHECK(s.defined(), "loop_eval: undefined statement");
  switch (s->kind) {
    case NodeKind::For: {
      const For* f = s.as<For>();
      int64_t lo = eval(f->min).lanes[0].i, extent = eval(f->extent).lanes[0].i;
      const std::string& name = f->var.as<Var>()->name;
      const int64_t outer_thread = thread_;
      for (int64_t i = lo; i < lo + extent; ++i) {
        Val v = make(i64_t());
        v.lanes[0].i = i;
        if (f->for_kind == ForKind::GpuThread) thread_ = i - lo;
        scoped(name, std::move(v), [&] { exec(f->body); });
      }
      thread_ = outer_thread;
      return;
    }
    case NodeKind::Store:
      return exec_store(s.as<Store>());
    case NodeKind::Block:
      for (const Stmt& c : s.as<Block>()->stmts) exec(c);
      return;
    case NodeKind::Allocate: {
      const Allocate* a = s.as<Allocate>();
      int64_t n = eval(a->size).lanes[0].i;
      KILN_INTERNAL_CHECK(n >= 0,
                          "loop_eval: Allocate " << a->buf->name << " of " << n << " elements");
      const bool per_thread = a->scope == MemoryScope::GpuLocal;
      std::vector<char> memory(per_thread ? 0 : size_t(n) * dtype_size(a->buf->dtype) + 1, 0);
      BoundBuffer bb{memory.data(), a->buf->dtype, 0, n, a->buf->name, nullptr};
      if (per_thread) bb.per_thread = std::make_shared<std::vector<char>>();
      std::optional<BoundBuffer> saved;
      if (auto it = buffers.find(a->buf.get()); it != buffers.end()) saved = it->second;
      buffers[a->buf.get()] = bb;
      exec(a->body);
      if (saved) {
        buffers[a->buf.get()] = *saved;
      } else {
        buffers.erase(a->buf.get());
      }
      return;
    }
    case NodeKind::IfThenElse: {
      const IfThenElse* i = s.as<IfThenElse>();
      if (eval(i->cond).lanes[0].i) {
        exec(i->then_case);
      } else if (i->else_case.defined()) {
        exec(i->else_case);
      }
      return;
    }
    case NodeKind::LetStmt: {
      const LetStmt* l = s.as<LetStmt>();
      scoped(l->var.as<Var>()->name, eval(l->value), [&] { exec(l->body); });
      return;
    }
    case NodeKind::Barrier:
      return;
    case NodeKind::ExternCall:
      if (s.as<ExternCall>()->name == kWarpMmaCall) return exec_warp_mma(s.as<ExternCall>());
      if (s.as<ExternCall>()->name == kPrefetchCall) return;  // a hint: no effect on values
      KILN_USER_ERROR("loop_eval: extern call '" << s.as<ExternCall>()->name
                                                 << "' cannot be evaluated (no CPU routine)");
    default:
      break;
  }
  KILN_INTERNAL_CHECK(false, "loop_eval: not a statement kind " << node_kind_name(s->kind));
}

Val scalar_from_slot(const Expr& var, int64_t slot) {
  VType t = var.type();
  Val v{t, std::vector<Lane>(1)};
  switch (t.dtype) {
    case DType::F64:
      v.lanes[0].f = std::bit_cast<double>(slot);
      break;
    case DType::F32:
      v.lanes[0].f = std::bit_cast<float>(static_cast<uint32_t>(slot));
      break;
    case DType::F16:
    case DType::BF16: {
      // The 16-bit pattern sits in the low bits (runtime::Executable packs it
      // with store_double, and the LLVM backend reads it the same way).
      uint16_t bits = static_cast<uint16_t>(slot);
      v.lanes[0].f = load_as_double(t.dtype, &bits);
      break;
    }
    default:
      v.lanes[0].i = wrap_int(t.dtype, slot);
      break;
  }
  return v;
}

}  // namespace

void eval_kernel(const Kernel& k, std::span<const Tensor> buffers,
                 std::span<const int64_t> scalars) {
  KILN_USER_CHECK(buffers.size() == k.buffers.size(), "loop_eval: kernel "
                                                          << k.name << " takes " << k.buffers.size()
                                                          << " buffers, got " << buffers.size());
  KILN_USER_CHECK(scalars.size() == k.scalars.size(), "loop_eval: kernel "
                                                          << k.name << " takes " << k.scalars.size()
                                                          << " scalars, got " << scalars.size());
  Evaluator ev;
  for (size_t i = 0; i < buffers.size(); ++i) {
    ev.buffers[k.buffers[i].get()] = bind_tensor(*k.buffers[i], buffers[i]);
  }
  for (size_t i = 0; i < scalars.size(); ++i) {
    const Var* v = k.scalars[i].as<Var>();
    KILN_INTERNAL_CHECK(v,
                        "loop_eval: scalar parameter " << i << " of " << k.name << " is not a Var");
    ev.bind_var(v->name, scalar_from_slot(k.scalars[i], scalars[i]));
  }
  if (k.body.defined()) ev.exec(k.body);
  if (ev.status != 0) runtime::raise_kernel_status(ev.status);
}

void eval_stmt(const Stmt& s, const std::vector<std::pair<Buf, Tensor>>& buffers,
               const std::map<std::string, int64_t>& vars) {
  Evaluator ev;
  for (const auto& [b, t] : buffers) ev.buffers[b.get()] = bind_tensor(*b, t);
  for (const auto& [name, value] : vars) {
    ev.bind_var(name, Val{i64_t(), {Lane{.i = value}}});
  }
  ev.exec(s);
  if (ev.status != 0) runtime::raise_kernel_status(ev.status);
}

int64_t eval_int(const Expr& e, const std::map<std::string, int64_t>& vars) {
  Evaluator ev;
  for (const auto& [name, value] : vars) ev.bind_var(name, Val{i64_t(), {Lane{.i = value}}});
  KILN_INTERNAL_CHECK(e.type().lanes == 1 && !is_floating(e.type().dtype),
                      "eval_int of " << e.type().str());
  return ev.eval(e).lanes[0].i;
}

int64_t pack_scalar(DType t, double value) {
  switch (t) {
    case DType::F64:
      return std::bit_cast<int64_t>(value);
    case DType::F32:
      return static_cast<int64_t>(std::bit_cast<uint32_t>(static_cast<float>(value)));
    case DType::F16:
    case DType::BF16: {
      int64_t slot = 0;  // the 16-bit pattern in the low bits, as the executable packs it
      store_double(t, &slot, value);
      return slot;
    }
    default:
      return static_cast<int64_t>(value);
  }
}

}  // namespace kiln::loop
