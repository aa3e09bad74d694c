// Simplifier rules, bottom-up: children are simplified first, then the node
// is folded or rewritten. Loop bounds enter the bounds map on the way down.
#include "ir/loop/simplify.h"

#include <cmath>

#include "ir/loop/visitor.h"
#include "kiln/element.h"
#include "kiln/error.h"

namespace kiln::loop {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// Saturating helpers for interval arithmetic.
std::optional<int64_t> add_opt(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  int64_t r;
  if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> mul_opt(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  int64_t r;
  if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

// Rounds a folded value to what the type can hold, so f32 folding matches f32
// arithmetic and integer folding wraps like the machine would.
Expr make_typed(VType t, double v) {
  if (t.dtype == DType::F32) v = double(float(v));
  if (t.dtype == DType::F16) v = half_to_float(float_to_half(float(v)));
  if (t.dtype == DType::BF16) v = bf16_to_float(float_to_bf16(float(v)));
  return make_const(t, v);
}
Expr make_typed_int(VType t, int64_t v) {
  alignas(8) unsigned char buf[8] = {};
  store_int(t.dtype, buf, v);
  return IntImm::make(t.element(), load_as_int(t.dtype, buf));
}

const Expr* scalar_of(const Expr& e) {
  if (const Broadcast* b = e.as<Broadcast>()) return &b->value;
  return &e;
}
bool const_int(const Expr& e, int64_t* v) { return is_const_int(*scalar_of(e), v); }
bool const_float(const Expr& e, double* v) {
  if (const FloatImm* f = scalar_of(e)->as<FloatImm>()) {
    *v = f->value;
    return true;
  }
  return false;
}
bool is_int_value(const Expr& e, int64_t want) {
  int64_t v;
  double d;
  if (const_int(e, &v)) return v == want;
  if (const_float(e, &d)) return d == double(want);
  return false;
}

Expr with_lanes_like(const Expr& scalar, const Expr& like) {
  int lanes = like.type().lanes;
  return lanes > 1 && scalar.type().lanes == 1 ? Broadcast::make(scalar, lanes) : scalar;
}

class Simplifier : public IRMutator {
 public:
  explicit Simplifier(BoundsMap bounds) : bounds_(std::move(bounds)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.type() == op->type) return v;
    int64_t i;
    double d;
    if (op->type.lanes == 1) {
      if (const_int(v, &i)) {
        return is_floating(op->type.dtype) ? make_typed(op->type, double(i))
                                           : make_typed_int(op->type, i);
      }
      if (const_float(v, &d) && std::isfinite(d)) {
        if (is_floating(op->type.dtype)) return make_typed(op->type, d);
        if (op->type.dtype == DType::Bool) return IntImm::make(op->type, d != 0);
        if (std::fabs(d) < 9.0e18) return make_typed_int(op->type, int64_t(d));
      }
    }
    return v.same_as(op->value) ? self : Cast::make(op->type, v);
  }

  Expr visit(const Binary* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr r = fold_binary(op->op, a, b); r.defined()) return r;
    return a.same_as(op->a) && b.same_as(op->b) ? self : Binary::make(op->op, a, b);
  }

  Expr visit(const Compare* op, const Expr& self) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.type().lanes == 1 && !is_floating(a.type().dtype) && a.type().dtype != DType::Bool) {
      // Decide from bounds: a - b has known sign.
      Interval d = bounds_of(a - b, bounds_);
      std::optional<bool> r;
      switch (op->op) {
        case CmpOp::LT:
          if (d.hi && *d.hi < 0) r = true;
          if (d.lo && *d.lo >= 0) r = false;
          break;
        case CmpOp::LE:
          if (d.hi && *d.hi <= 0) r = true;
          if (d.lo && *d.lo > 0) r = false;
          break;
        case CmpOp::GT:
          if (d.lo && *d.lo > 0) r = true;
          if (d.hi && *d.hi <= 0) r = false;
          break;
        case CmpOp::GE:
          if (d.lo && *d.lo >= 0) r = true;
          if (d.hi && *d.hi < 0) r = false;
          break;
        case CmpOp::EQ:
          if (d.is_point() && *d.lo == 0) r = true;
          if ((d.lo && *d.lo > 0) || (d.hi && *d.hi < 0)) r = false;
          break;
        case CmpOp::NE:
          if (d.is_point() && *d.lo == 0) r = false;
          if ((d.lo && *d.lo > 0) || (d.hi && *d.hi < 0)) r = true;
          break;
      }
      if (r) return IntImm::make(bool_t(), *r);
    }
    double x, y;
    if (a.type().lanes == 1 && const_float(a, &x) && const_float(b, &y)) {
      bool r = false;
      switch (op->op) {
        case CmpOp::LT: r = x < y; break;
        case CmpOp::LE: r = x <= y; break;
        case CmpOp::GT: r = x > y; break;
        case CmpOp::GE: r = x >= y; break;
        case CmpOp::EQ: r = x == y; break;
        case CmpOp::NE: r = x != y; break;
      }
      return IntImm::make(bool_t(), r);
    }
    return a.same_as(op->a) && b.same_as(op->b) ? self : Compare::make(op->op, a, b);
  }

  Expr visit(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    int64_t v;
    if (a.type().lanes == 1 && const_int(a, &v)) return IntImm::make(bool_t(), !v);
    if (const Not* n = a.as<Not>()) return n->a;
    return a.same_as(op->a) ? self : Not::make(a);
  }

  Expr visit(const Select* op, const Expr& self) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    int64_t v;
    if (c.type().lanes == 1 && const_int(c, &v)) return v ? t : f;
    if (equal(t, f)) return t;
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return Select::make(c, t, f);
  }

  Expr visit(const Let* op, const Expr& self) override {
    Expr v = mutate(op->value);
    const std::string& name = op->var.as<Var>()->name;
    // Constants and plain variables are cheaper inlined than bound.
    if (is_const(v) || v.as<Var>()) return mutate(substitute(op->body, name, v));
    Interval saved = lookup(name);
    bounds_[name] = bounds_of(v, bounds_);
    Expr b = mutate(op->body);
    restore(name, saved);
    return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
  }

  Stmt visit(const For* op, const Stmt& self) override {
    Expr m = mutate(op->min), e = mutate(op->extent);
    int64_t ext;
    if (is_const_int(e, &ext) && ext <= 0) return Block::make({});
    const std::string& name = op->var.as<Var>()->name;
    if (is_const_int(e, &ext) && ext == 1 && op->for_kind != ForKind::GpuBlock &&
        op->for_kind != ForKind::GpuThread) {
      return mutate(substitute(op->body, name, m));
    }
    Interval saved = lookup(name);
    Interval mb = bounds_of(m, bounds_), eb = bounds_of(e, bounds_);
    bounds_[name] = Interval{mb.lo, add_opt(mb.hi, add_opt(eb.hi, int64_t{-1}))};
    Stmt b = mutate(op->body);
    restore(name, saved);
    if (!b.defined()) return b;
    if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
    return For::make(op->var, m, e, op->for_kind, b);
  }

  Stmt visit(const IfThenElse* op, const Stmt& self) override {
    Expr c = mutate(op->cond);
    int64_t v;
    if (const_int(c, &v)) return v ? mutate(op->then_case) : mutate(op->else_case);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
    // A branch that folded away (a loop of extent 0) leaves the other one.
    if (!t.defined()) return e.defined() ? IfThenElse::make(Not::make(c), e) : t;
    return IfThenElse::make(c, t, e);
  }

  Stmt visit(const Allocate* op, const Stmt& self) override {
    Expr size = mutate(op->size);
    Stmt b = mutate(op->body);
    if (!b.defined()) return b;
    if (size.same_as(op->size) && b.same_as(op->body)) return self;
    return Allocate::make(op->buf, size, op->scope, b);
  }

  Stmt visit(const LetStmt* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    const std::string& name = op->var.as<Var>()->name;
    if (is_const(v) || v.as<Var>()) return mutate(substitute(op->body, name, v));
    Interval saved = lookup(name);
    bounds_[name] = bounds_of(v, bounds_);
    Stmt b = mutate(op->body);
    restore(name, saved);
    if (!b.defined()) return b;  // the body folded away (e.g. a loop of extent 0)
    return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
  }

 private:
  Interval lookup(const std::string& name) const {
    auto it = bounds_.find(name);
    return it == bounds_.end() ? Interval{} : it->second;
  }
  void restore(const std::string& name, const Interval& saved) {
    if (!saved.lo && !saved.hi) {
      bounds_.erase(name);
    } else {
      bounds_[name] = saved;
    }
  }

  // Returns an undefined Expr when no rule applies.
  Expr fold_binary(BinOp op, const Expr& a, const Expr& b) {
    VType t = a.type();
    int64_t x, y;
    double fx, fy;
    bool ci = const_int(a, &x) && const_int(b, &y);
    bool cf = const_float(a, &fx) && const_float(b, &fy);
    if (ci && t.dtype != DType::Bool) {
      std::optional<int64_t> r;
      switch (op) {
        case BinOp::Add: r = int64_t(uint64_t(x) + uint64_t(y)); break;
        case BinOp::Sub: r = int64_t(uint64_t(x) - uint64_t(y)); break;
        case BinOp::Mul: r = int64_t(uint64_t(x) * uint64_t(y)); break;
        case BinOp::Div:
          if (y != 0) r = floor_div(x, y);
          break;
        case BinOp::Mod:
          if (y != 0) r = floor_mod(x, y);
          break;
        case BinOp::Min: r = std::min(x, y); break;
        case BinOp::Max: r = std::max(x, y); break;
        case BinOp::BitAnd: r = x & y; break;
        case BinOp::BitOr: r = x | y; break;
        case BinOp::BitXor: r = x ^ y; break;
        default: break;
      }
      if (r) return with_lanes_like(make_typed_int(t.element(), *r), a);
    }
    if (ci && t.dtype == DType::Bool) {
      bool r = false;
      switch (op) {
        case BinOp::And: r = x && y; break;
        case BinOp::Or: r = x || y; break;
        case BinOp::BitAnd: r = x & y; break;
        case BinOp::BitOr: r = x | y; break;
        case BinOp::BitXor: r = x ^ y; break;
        default: return Expr();
      }
      return with_lanes_like(IntImm::make(bool_t(), r), a);
    }
    if (cf) {
      std::optional<double> r;
      switch (op) {
        case BinOp::Add: r = fx + fy; break;
        case BinOp::Sub: r = fx - fy; break;
        case BinOp::Mul: r = fx * fy; break;
        case BinOp::Div: r = fx / fy; break;
        case BinOp::Min: r = std::fmin(fx, fy); break;
        case BinOp::Max: r = std::fmax(fx, fy); break;
        default: break;
      }
      if (r) return with_lanes_like(make_typed(t.element(), *r), a);
    }
    bool integral = !is_floating(t.dtype);
    switch (op) {
      case BinOp::Add:
        if (is_int_value(b, 0)) return a;
        if (is_int_value(a, 0)) return b;
        if (is_const(a) && !is_const(b)) return b + a;  // constants to the right
        if (const Binary* ab = a.as<Binary>(); ab && ab->op == BinOp::Add && is_const(ab->b) && is_const(b)) {
          return fold_or_make(BinOp::Add, ab->a, fold_or_make(BinOp::Add, ab->b, b));
        }
        if (const Ramp* ra = a.as<Ramp>()) {
          if (const Broadcast* bb = b.as<Broadcast>()) {
            return Ramp::make(fold_or_make(BinOp::Add, ra->base, bb->value), ra->stride, ra->lanes);
          }
        }
        if (const Broadcast* ba = a.as<Broadcast>()) {
          if (const Broadcast* bb = b.as<Broadcast>()) {
            return Broadcast::make(fold_or_make(BinOp::Add, ba->value, bb->value), ba->lanes);
          }
        }
        if (integral && t.lanes == 1) {
          if (Expr r = fold_div_mod(a, b); r.defined()) return r;
        }
        break;
      case BinOp::Sub:
        if (is_int_value(b, 0)) return a;
        if (integral && equal(a, b)) return make_zero(t);
        if (const Binary* ab = a.as<Binary>(); ab && ab->op == BinOp::Add && integral) {
          if (equal(ab->b, b)) return ab->a;
          if (equal(ab->a, b)) return ab->b;
        }
        break;
      case BinOp::Mul:
        if (is_int_value(b, 1)) return a;
        if (is_int_value(a, 1)) return b;
        if (integral && (is_int_value(a, 0) || is_int_value(b, 0))) return make_zero(t);
        if (is_const(a) && !is_const(b)) return b * a;
        if (const Broadcast* ba = a.as<Broadcast>()) {
          if (const Broadcast* bb = b.as<Broadcast>()) {
            return Broadcast::make(fold_or_make(BinOp::Mul, ba->value, bb->value), ba->lanes);
          }
        }
        if (const Ramp* ra = a.as<Ramp>()) {
          if (const Broadcast* bb = b.as<Broadcast>()) {
            return Ramp::make(fold_or_make(BinOp::Mul, ra->base, bb->value),
                              fold_or_make(BinOp::Mul, ra->stride, bb->value), ra->lanes);
          }
        }
        break;
      case BinOp::Div:
        if (is_int_value(b, 1)) return a;
        if (integral && t.lanes == 1 && const_int(b, &y) && y > 0) {
          if (Expr r = div_by_const(a, y); r.defined()) return r;
        }
        break;
      case BinOp::Mod:
        if (integral && is_int_value(b, 1)) return make_zero(t);
        if (integral && t.lanes == 1 && const_int(b, &y) && y > 0) {
          if (Expr r = mod_by_const(a, y); r.defined()) return r;
        }
        break;
      case BinOp::Min:
      case BinOp::Max: {
        if (equal(a, b)) return a;
        if (integral && t.lanes == 1) {
          Interval ia = bounds_of(a, bounds_), ib = bounds_of(b, bounds_);
          bool a_le_b = ia.hi && ib.lo && *ia.hi <= *ib.lo;
          bool b_le_a = ib.hi && ia.lo && *ib.hi <= *ia.lo;
          if (a_le_b) return op == BinOp::Min ? a : b;
          if (b_le_a) return op == BinOp::Min ? b : a;
        }
        break;
      }
      case BinOp::And:
        if (is_int_value(a, 1)) return b;
        if (is_int_value(b, 1)) return a;
        if (is_int_value(a, 0) || is_int_value(b, 0)) return make_zero(t);
        break;
      case BinOp::Or:
        if (is_int_value(a, 0)) return b;
        if (is_int_value(b, 0)) return a;
        if (is_int_value(a, 1) || is_int_value(b, 1)) return make_one(t);
        break;
      default: break;
    }
    return Expr();
  }

  Expr fold_or_make(BinOp op, const Expr& a, const Expr& b) {
    Expr r = fold_binary(op, a, b);
    return r.defined() ? r : Binary::make(op, a, b);
  }

  // (x / c) * c + x % c -> x, also after other terms ((y + (x / c) * c) + x % c
  // -> y + x): a flattened index split into row and column and packed again
  // (a conv over flattened pixels storing at [row, column]) stays one ramp.
  // Floor division and modulo make it exact for any constant c != 0.
  Expr fold_div_mod(const Expr& a, const Expr& b) {
    const Binary* mod = b.as<Binary>();
    int64_t c = 0;
    if (!mod || mod->op != BinOp::Mod || !const_int(mod->b, &c) || c == 0) return Expr();
    auto splits = [&](const Expr& e) {
      const Binary* mul = e.as<Binary>();
      if (!mul || mul->op != BinOp::Mul || !equal(mul->b, mod->b)) return false;
      const Binary* div = mul->a.as<Binary>();
      return div && div->op == BinOp::Div && equal(div->a, mod->a) && equal(div->b, mod->b);
    };
    if (splits(a)) return mod->a;
    if (const Binary* s = a.as<Binary>(); s && s->op == BinOp::Add && splits(s->b)) {
      return fold_or_make(BinOp::Add, s->a, mod->a);
    }
    return Expr();
  }

  // (x * c) / d, (x * c + y) / c with 0 <= y < c, and x / c with 0 <= x < c.
  Expr div_by_const(const Expr& a, int64_t c) {
    Interval ia = bounds_of(a, bounds_);
    if (ia.lo && ia.hi && *ia.lo >= 0 && *ia.hi < c) return make_zero(a.type());
    if (ia.lo && ia.hi && floor_div(*ia.lo, c) == floor_div(*ia.hi, c)) {
      return make_int(floor_div(*ia.lo, c));
    }
    int64_t k;
    if (const Binary* m = a.as<Binary>(); m && m->op == BinOp::Mul && const_int(m->b, &k) && k % c == 0) {
      return fold_or_make(BinOp::Mul, m->a, make_int(k / c));
    }
    if (const Binary* s = a.as<Binary>(); s && s->op == BinOp::Add) {
      if (const Binary* m = s->a.as<Binary>(); m && m->op == BinOp::Mul && const_int(m->b, &k) && k % c == 0) {
        Interval iy = bounds_of(s->b, bounds_);
        if (iy.lo && iy.hi && *iy.lo >= 0 && *iy.hi < c) {
          return fold_or_make(BinOp::Mul, m->a, make_int(k / c));
        }
      }
    }
    return Expr();
  }

  Expr mod_by_const(const Expr& a, int64_t c) {
    Interval ia = bounds_of(a, bounds_);
    if (ia.lo && ia.hi && *ia.lo >= 0 && *ia.hi < c) return a;
    int64_t k;
    if (const Binary* m = a.as<Binary>(); m && m->op == BinOp::Mul && const_int(m->b, &k) && k % c == 0) {
      return make_zero(a.type());
    }
    if (const Binary* s = a.as<Binary>(); s && s->op == BinOp::Add) {
      if (const Binary* m = s->a.as<Binary>(); m && m->op == BinOp::Mul && const_int(m->b, &k) && k % c == 0) {
        return fold_or_make(BinOp::Mod, s->b, make_int(c));
      }
    }
    return Expr();
  }

  BoundsMap bounds_;
};

}  // namespace

Interval bounds_of(const Expr& e, const BoundsMap& bounds) {
  if (!e.defined() || e.type().lanes != 1 || is_floating(e.type().dtype)) return {};
  if (const IntImm* i = e.as<IntImm>()) return {i->value, i->value};
  if (const Var* v = e.as<Var>()) {
    auto it = bounds.find(v->name);
    return it == bounds.end() ? Interval{} : it->second;
  }
  if (const Cast* c = e.as<Cast>()) {
    if (c->type.dtype == DType::I64 && !is_floating(c->value.type().dtype)) return bounds_of(c->value, bounds);
    return {};
  }
  if (const Binary* b = e.as<Binary>()) {
    Interval x = bounds_of(b->a, bounds), y = bounds_of(b->b, bounds);
    switch (b->op) {
      case BinOp::Add: return {add_opt(x.lo, y.lo), add_opt(x.hi, y.hi)};
      case BinOp::Sub: {
        auto neg = [](std::optional<int64_t> v) -> std::optional<int64_t> {
          if (!v || *v == INT64_MIN) return std::nullopt;
          return -*v;
        };
        return {add_opt(x.lo, neg(y.hi)), add_opt(x.hi, neg(y.lo))};
      }
      case BinOp::Mul: {
        int64_t k;
        if (is_const_int(b->b, &k)) {
          if (k >= 0) return {mul_opt(x.lo, k), mul_opt(x.hi, k)};
          return {mul_opt(x.hi, k), mul_opt(x.lo, k)};
        }
        if (x.lo && y.lo && *x.lo >= 0 && *y.lo >= 0) return {mul_opt(x.lo, y.lo), mul_opt(x.hi, y.hi)};
        return {};
      }
      case BinOp::Div: {
        int64_t k;
        if (is_const_int(b->b, &k) && k > 0) {
          return {x.lo ? std::optional<int64_t>(floor_div(*x.lo, k)) : std::nullopt,
                  x.hi ? std::optional<int64_t>(floor_div(*x.hi, k)) : std::nullopt};
        }
        return {};
      }
      case BinOp::Mod: {
        int64_t k;
        if (is_const_int(b->b, &k) && k > 0) return {0, k - 1};
        if (y.lo && *y.lo > 0 && y.hi) return {0, *y.hi - 1};
        return {};
      }
      case BinOp::Min: {
        Interval r;
        if (x.lo && y.lo) r.lo = std::min(*x.lo, *y.lo);
        if (x.hi || y.hi) r.hi = x.hi && y.hi ? std::min(*x.hi, *y.hi) : (x.hi ? x.hi : y.hi);
        return r;
      }
      case BinOp::Max: {
        Interval r;
        if (x.lo || y.lo) r.lo = x.lo && y.lo ? std::max(*x.lo, *y.lo) : (x.lo ? x.lo : y.lo);
        if (x.hi && y.hi) r.hi = std::max(*x.hi, *y.hi);
        return r;
      }
      default: return {};
    }
  }
  if (const Select* s = e.as<Select>()) {
    Interval x = bounds_of(s->true_value, bounds), y = bounds_of(s->false_value, bounds);
    Interval r;
    if (x.lo && y.lo) r.lo = std::min(*x.lo, *y.lo);
    if (x.hi && y.hi) r.hi = std::max(*x.hi, *y.hi);
    return r;
  }
  return {};
}

Expr simplify(const Expr& e, const BoundsMap& bounds) { return Simplifier(bounds).mutate(e); }
Stmt simplify(const Stmt& s, const BoundsMap& bounds) { return Simplifier(bounds).mutate(s); }

}  // namespace kiln::loop
