// gpu_pointwise: elementwise and layout kernels onto a flat GPU grid
// (gpu_schedule.h). Assumes a lowered, unscheduled kernel of category
// Elementwise or Layout whose top-level statements are perfect loop nests
// from 0 to extents of kernel parameters, every iteration of a nest writing
// its own elements (what the CPU schedule relies on to vectorize and
// parallelize any of its loops), and nests that write what another touches
// are not fused (checked: such a kernel is left to gpu_map). Guarantees
// GPU-mapped loop IR computing the same values, one phase:
//
//   for (i0, 0, N) { for (i1, 0, D) { y[i0 * D + i1] = f(x[i0 * x_s0 + i1 * x_s1]) } }
// becomes (B threads, V = 4 elements each; T = N * D)
//   for (gpu_blk, 0, (T + 4B - 1) / 4B) gpu_block {
//     for (gpu_thr, 0, B) gpu_thread {
//       let gpu_e = (gpu_blk * B + gpu_thr) * 4            the thread's first element
//       if (gpu_e + 4 <= T && D % 4 == 0) {                four along one row
//         allocate gpu_at[i64 * 2] in stack                its coordinates, in 32-bit
//         if (T <= 2^31 - 1 - 4B) { gpu_at[0] = i64(i32(gpu_e) / i32(D)) ... }  math when
//         else { gpu_at[0] = gpu_e / D ... }                                    every index fits
//         allocate y_v[f32 * 4] in stack
//         y_v[0] = f(x[gpu_at[0] * x_s0 + gpu_at[1] * x_s1]) ... y_v[3] = ...
//         y[ramp(gpu_e, 1, 4)] = y_v[ramp(0, 1, 4)]        one 16-byte store
//       } else {                                           the tail, or rows not a
//         for each of the 4: if (gpu_e + k < T) { its coordinates; y[...] = f(...) }
//       }
//     }
//   }
//
// The dense stores are to the elements the nest writes in order (the store
// index is the flat element number) of buffers the kernel writes, which the
// plan allocates (64-byte aligned): an index that is a multiple of the lane
// count is then 16-byte aligned (f32). Inputs read along the innermost dim
// get one dense load of the V elements each, in a version taken when their
// stride parameters are 1 (vector_loads below); an input may be a view at
// any offset, which the CUDA C's kiln_vload handles by checking alignment
// per access.
// The grid comes from the symbolic dims, so one compile serves every size.
#include <limits>
#include <map>

#include "ir/loop/analysis.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/schedule/gpu_internal.h"
#include "passes/schedule/schedule.h"

namespace kiln::passes {

using namespace kiln::loop;                // NOLINT
using namespace kiln::passes::gpu_detail;  // NOLINT

namespace {

const std::string& name_of(const Expr& var) {
  return var.as<Var>()->name;
}

// One perfect nest: its loop variables, extents and innermost body.
struct Nest {
  std::vector<Expr> vars, extents;
  Stmt body;
  Expr elements;  // the product of the extents
};

bool has_loop(const Stmt& s) {
  struct Finder : IRVisitor {
    using IRVisitor::visit_node;
    bool found = false;
    void visit_node(const For*) override { found = true; }
    void visit_node(const Barrier*) override { found = true; }
    void visit_node(const ExternCall*) override { found = true; }
  } f;
  f.visit(s);
  return f.found;
}

struct BufUse {
  std::set<const BufferNode*> read, written;
};

BufUse uses_of(const Stmt& s) {
  struct Collector : IRVisitor {
    using IRVisitor::visit_node;
    BufUse u;
    std::set<const BufferNode*> allocated;
    void visit_node(const Load* op) override {
      u.read.insert(op->buf.get());
      IRVisitor::visit_node(op);
    }
    void visit_node(const Store* op) override {
      u.written.insert(op->buf.get());
      IRVisitor::visit_node(op);
    }
    void visit_node(const Allocate* op) override {
      allocated.insert(op->buf.get());
      IRVisitor::visit_node(op);
    }
  } c;
  c.visit(s);
  for (const BufferNode* b : c.allocated) {
    c.u.read.erase(b);
    c.u.written.erase(b);
  }
  return c.u;
}

// The arithmetic in `s` (binary operations, selects, calls, casts): what
// a thread keeps live per element it computes.
int64_t operations(const Stmt& s) {
  struct Counter : IRVisitor {
    using IRVisitor::visit_node;
    int64_t n = 0;
    void visit_node(const Binary* op) override {
      ++n;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Select* op) override {
      ++n;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Call* op) override {
      ++n;
      IRVisitor::visit_node(op);
    }
    void visit_node(const Cast* op) override {
      ++n;
      IRVisitor::visit_node(op);
    }
  } c;
  if (s.defined()) c.visit(s);
  return c.n;
}

// Above this many operations per element a thread computes one element:
// four copies of a long chain (an integer pow is 64 square-and-multiply
// steps) exceed the registers and spill, and the chain hides memory
// latency by itself.
constexpr int64_t kOneElementOperations = 128;

class Pointwise {
 public:
  Pointwise(const Kernel& k, const GpuTarget& target, const GpuScheduleOptions& o)
      : k_(k), names_(k), o_(o) {
    const int64_t cap = std::max<int64_t>(1, target.max_threads_per_block);
    threads_ = std::max<int64_t>(1, std::min(o.threads, cap));
    lanes_ = std::max<int64_t>(1, std::min<int64_t>(o.vector_lanes, 16));
    for (const Expr& s : k.scalars) scalars_.insert(name_of(s));
  }

  std::optional<Kernel> run() {
    std::vector<Nest> nests;
    for (const Stmt& part : top_level(k_.body)) {
      std::optional<Nest> n = nest_of(part);
      if (!n) return std::nullopt;
      nests.push_back(*n);
    }
    if (nests.empty() || !independent(nests)) return std::nullopt;
    int64_t ops = 0;
    for (const Nest& n : nests) ops += operations(n.body);
    if (ops > kOneElementOperations) lanes_ = 1;
    blk_ = Var::make(i64_t(), names_.fresh("gpu_blk"));
    thr_ = Var::make(i64_t(), names_.fresh("gpu_thr"));
    e_ = Var::make(i64_t(), names_.fresh("gpu_e"));
    Expr most = nests[0].elements;
    for (size_t i = 1; i < nests.size(); ++i) most = max(most, nests[i].elements);
    most = simplify(most);
    const int64_t per_block = threads_ * lanes_;
    // 32-bit coordinate math when every element number, and the first one
    // of every thread of the grid, fits in int32.
    fits32_ = IntImm::make(bool_t(), 0);
    if (o_.index32) {
      const int64_t limit = std::numeric_limits<int32_t>::max() - per_block;
      Expr cond = nests[0].elements <= make_int(limit);
      for (size_t i = 1; i < nests.size(); ++i) cond = cond && nests[i].elements <= make_int(limit);
      fits32_ = simplify(cond);
    }
    std::vector<Stmt> work;
    for (Nest& n : nests) work.push_back(map_nest(n, nests.size() > 1));
    Stmt body =
        LetStmt::make(e_, (blk_ * make_int(threads_) + thr_) * make_int(lanes_), Block::make(work));
    Stmt threads = For::make(thr_, make_int(0), make_int(threads_), ForKind::GpuThread, body);
    Expr grid = simplify((most + make_int(per_block - 1)) / make_int(per_block));
    Kernel out = k_;
    out.body = simplify(For::make(blk_, make_int(0), grid, ForKind::GpuBlock, threads));
    return out;
  }

 private:
  bool only_scalars(const Expr& e) const {
    for (const std::string& v : vars_of(e)) {
      if (!scalars_.count(v)) return false;
    }
    return true;
  }

  std::optional<Nest> nest_of(const Stmt& part) {
    Nest n;
    Stmt s = part;
    while (const For* f = s.as<For>()) {
      if (f->for_kind != ForKind::Serial || !equal(simplify(f->min), make_int(0)) ||
          !only_scalars(f->extent)) {
        return std::nullopt;
      }
      n.vars.push_back(f->var);
      n.extents.push_back(f->extent);
      s = f->body;
    }
    if (has_loop(s)) return std::nullopt;
    n.body = s;
    // Sizes are never negative; other extents may be (no iterations).
    Expr total = make_int(1);
    for (const Expr& e : n.extents) total = total * (e.as<Var>() ? e : max(e, make_int(0)));
    n.elements = simplify(total);
    return n;
  }

  // The nests may run side by side, each thread taking the same elements of
  // each, one nest after the other: a buffer one nest writes and another
  // touches is accessed only at the flat element number, by nests over the
  // same extents (a value stored once and read by the next nest), so a
  // thread reads only what it wrote.
  static bool independent(const std::vector<Nest>& nests) {
    std::vector<BufUse> uses;
    for (const Nest& n : nests) uses.push_back(uses_of(n.body));
    for (size_t i = 0; i < nests.size(); ++i) {
      for (size_t j = 0; j < nests.size(); ++j) {
        if (i == j) continue;
        for (const BufferNode* b : uses[i].written) {
          if (!uses[j].written.count(b) && !uses[j].read.count(b)) continue;
          if (!same_extents(nests[i], nests[j]) || !only_flat(nests[i], b) ||
              !only_flat(nests[j], b)) {
            return false;
          }
        }
      }
    }
    return true;
  }

  static bool same_extents(const Nest& a, const Nest& b) {
    if (a.extents.size() != b.extents.size()) return false;
    for (size_t i = 0; i < a.extents.size(); ++i) {
      if (!equal(simplify(a.extents[i]), simplify(b.extents[i]))) return false;
    }
    return true;
  }

  // Whether every access of `n` to `b` is at its flat element number.
  static bool only_flat(const Nest& n, const BufferNode* b) {
    struct Indices : IRVisitor {
      using IRVisitor::visit_node;
      const BufferNode* b = nullptr;
      std::vector<std::pair<Expr, bool>> found;  // index, predicated
      void visit_node(const Load* op) override {
        if (op->buf.get() == b) found.push_back({op->index, op->predicate.defined()});
        IRVisitor::visit_node(op);
      }
      void visit_node(const Store* op) override {
        if (op->buf.get() == b) found.push_back({op->index, op->predicate.defined()});
        IRVisitor::visit_node(op);
      }
    } idx;
    idx.b = b;
    idx.visit(n.body);
    for (const auto& [index, predicated] : idx.found) {
      if (predicated || !is_flat(n, index)) return false;
    }
    return true;
  }

  // `body` for the element whose coordinates are computed from `flat`.
  Stmt at_element(const Nest& n, const Expr& flat, const Stmt& body) {
    const size_t dims = n.vars.size();
    if (dims == 0) return body;
    if (dims == 1) return LetStmt::make(n.vars[0], flat, body);
    // Coordinates into one small array, computed in 32-bit math when it fits
    // (integer division is the costly part), read back as the loop variables.
    Buf at = make_buf(names_.fresh("gpu_at"), DType::I64);
    auto coords = [&](bool narrow) {
      VType t = narrow ? VType{DType::I32, 1} : i64_t();
      auto as_t = [&](const Expr& e) { return narrow ? Cast::make(t, e) : e; };
      std::vector<Stmt> out;
      Expr rest = as_t(flat);
      for (size_t i = dims; i-- > 0;) {
        Expr extent = as_t(n.extents[i]);
        Expr coord = i == 0 ? rest : rest % extent;
        Expr wide = narrow ? Cast::make(i64_t(), coord) : coord;
        out.push_back(Store::make(at, make_int(int64_t(i)), wide));
        if (i > 0) rest = rest / extent;
      }
      return Block::make(out);
    };
    Stmt fill;
    int64_t fits = 0;
    if (is_const_int(fits32_, &fits)) {
      fill = coords(fits != 0);
    } else {
      fill = IfThenElse::make(fits32_, coords(true), coords(false));
    }
    Stmt inner = body;
    for (size_t i = dims; i-- > 0;) {
      inner = LetStmt::make(n.vars[i], Load::make(at, make_int(int64_t(i))), inner);
    }
    return Allocate::make(at, make_int(int64_t(dims)), MemoryScope::Stack,
                          Block::make({fill, inner}));
  }

  // Whether `index` is the flat element number of the nest (row-major).
  static bool is_flat(const Nest& n, const Expr& index) {
    Expr flat = make_int(0);
    for (size_t i = 0; i < n.vars.size(); ++i) flat = flat * n.extents[i] + n.vars[i];
    int64_t d = -1;
    return index.type().lanes == 1 && is_const_int(simplify(index - flat), &d) && d == 0;
  }

  // The buffers whose stores in `body` can become one dense vector store per
  // thread: written only by straight-line stores at the flat element number,
  // and not read in the nest.
  std::vector<Buf> vector_stores(const Nest& n) const {
    BufUse u = uses_of(n.body);
    std::map<const BufferNode*, Buf> bufs;
    std::set<const BufferNode*> bad;
    struct Stores : IRVisitor {
      using IRVisitor::visit_node;
      std::vector<std::pair<const Store*, bool>> found;  // and whether straight-line
      int depth = 0;
      void visit_node(const Store* op) override {
        found.push_back({op, depth == 0});
        IRVisitor::visit_node(op);
      }
      void visit_node(const IfThenElse* op) override {
        ++depth;
        IRVisitor::visit_node(op);
        --depth;
      }
    } st;
    st.visit(n.body);
    for (const auto& [s, straight] : st.found) {
      const BufferNode* b = s->buf.get();
      if (!u.written.count(b)) continue;  // scratch allocated in the body
      if (!straight || s->predicate.defined() || u.read.count(b) || !is_flat(n, s->index)) {
        bad.insert(b);
      }
      bufs[b] = s->buf;
    }
    std::vector<Buf> out;
    for (const auto& [b, buf] : bufs) {
      if (!bad.count(b)) out.push_back(buf);
    }
    return out;
  }

  Stmt map_nest(const Nest& n, bool guard) {
    const int64_t V = lanes_;
    Expr e = e_;
    // General: each element on its own, guarded (the tail, and rows whose
    // length is not a multiple of V).
    std::vector<Stmt> each;
    for (int64_t l = 0; l < V; ++l) {
      Expr flat = e + make_int(l);
      each.push_back(IfThenElse::make(flat < n.elements, at_element(n, flat, n.body)));
    }
    Stmt general = Block::make(each);
    std::vector<Buf> dense = vector_stores(n);
    Stmt mapped = general;
    if (!dense.empty() && V > 1) {
      // Fast: V elements along one row, their stores gathered into a small
      // array and written with one dense store per buffer.
      std::map<const BufferNode*, Buf> staged;
      for (const Buf& b : dense) staged[b.get()] = make_buf(names_.fresh(b->name + "_v"), b->dtype);
      const size_t dims = n.vars.size();
      auto lanes_of = [&](const Stmt& body) {
        std::vector<Stmt> lanes;
        for (int64_t l = 0; l < V; ++l) {
          Stmt b = StageStores(staged, make_int(l)).mutate(body);
          if (dims > 0) b = substitute(b, name_of(n.vars.back()), n.vars.back() + make_int(l));
          lanes.push_back(b);
        }
        return lanes;
      };
      Stmt fast = at_element(n, e, Block::make(lanes_of(n.body)));
      if (!o_.scalar_input_loads && dims > 0) {
        if (std::optional<std::pair<Expr, Stmt>> v = vector_loads(n, lanes_of)) {
          fast = IfThenElse::make(v->first, at_element(n, e, v->second), fast);
        }
      }
      std::vector<Stmt> writes;
      for (const Buf& b : dense) {
        const Buf& s = staged[b.get()];
        writes.push_back(Store::make(b, Ramp::make(e, make_int(1), int(V)),
                                     Load::make(s, Ramp::make(make_int(0), make_int(1), int(V)))));
      }
      fast = Block::make({fast, Block::make(writes)});
      for (const Buf& b : dense) {
        fast = Allocate::make(staged[b.get()], make_int(V), MemoryScope::Stack, fast);
      }
      Expr whole = e + make_int(V) <= n.elements;
      if (dims > 1) whole = whole && n.extents.back() % make_int(V) == make_int(0);
      whole = simplify(whole);
      mapped = IfThenElse::make(whole, fast, general);
    }
    if (guard) mapped = IfThenElse::make(e < n.elements, mapped);
    return mapped;
  }

  // The fast path's V elements with each input read along the row by one
  // dense V-lane load (kiln_vload in CUDA C: 128-bit for f32 when the
  // address is 16-byte aligned at run time, element by element otherwise,
  // so a view at any offset is still read correctly) into a small array
  // that the elements then read. An input's run is dense when its index
  // steps by 1 along the innermost dim: a constant 1, or a stride parameter
  // `s` that is 1 in this call. Returns the condition (every such `s == 1`,
  // checked per call from the actual strides; the scalar version runs
  // otherwise) and the elements' statements with the loads, or nullopt when
  // no input has such a run. Only unpredicated loads of buffers the kernel
  // does not write, outside any branch of the body, at indices of the nest's
  // coordinates and parameters, are taken: their V elements are in the
  // tensor whenever the fast path's are.
  template <typename LanesOf>
  std::optional<std::pair<Expr, Stmt>> vector_loads(const Nest& n, const LanesOf& lanes_of) {
    const int64_t V = lanes_;
    const BufUse u = uses_of(n.body);
    const std::string last = name_of(n.vars.back());
    std::set<std::string> allowed = scalars_;
    for (const Expr& v : n.vars) allowed.insert(name_of(v));
    struct Loads : IRVisitor {
      using IRVisitor::visit_node;
      std::vector<const Load*> found;
      void visit_node(const Load* op) override {
        found.push_back(op);
        IRVisitor::visit_node(op);
      }
      void visit_node(const IfThenElse* op) override { visit(op->cond); }
    } loads;
    loads.visit(n.body);
    std::vector<Expr> strides;  // stride parameters that must be 1
    std::vector<std::pair<Buf, Expr>> runs;
    auto at = [&](const Expr& index, int64_t k) { return substitute(index, last, make_int(k)); };
    for (const Load* l : loads.found) {
      if (u.written.count(l->buf.get()) || l->predicate.defined() || l->index.type().lanes != 1)
        continue;
      bool plain = true;
      for (const std::string& v : vars_of(l->index)) plain = plain && allowed.count(v);
      if (!plain || !vars_of(l->index).count(last)) continue;
      if (!linear_in(l->index, last)) continue;
      Expr step = simplify(at(l->index, 1) - at(l->index, 0));
      int64_t c = 0;
      if (is_const_int(step, &c)) {
        if (c != 1) continue;
      } else if (const Var* sv = step.as<Var>(); sv && scalars_.count(sv->name)) {
        bool seen = false;
        for (const Expr& s : strides) seen = seen || equal(s, step);
        if (!seen) strides.push_back(step);
      } else {
        continue;
      }
      runs.push_back({l->buf, l->index});
    }
    if (runs.empty()) return std::nullopt;
    Stmt body = n.body;
    Expr cond = IntImm::make(bool_t(), 1);
    for (const Expr& s : strides) {
      body = substitute(body, name_of(s), make_int(1));
      cond = cond && s == make_int(1);
    }
    // One small array per distinct run, filled by one dense load.
    std::vector<std::tuple<Buf, Expr, Buf>> arrays;  // input, index (stride 1), array
    for (const auto& [buf, index] : runs) {
      Expr at = index;
      for (const Expr& s : strides) at = substitute(at, name_of(s), make_int(1));
      at = simplify(at);
      bool seen = false;
      for (const auto& [b, i, a] : arrays) seen = seen || (b.get() == buf.get() && equal(i, at));
      if (!seen) arrays.push_back({buf, at, make_buf(names_.fresh(buf->name + "_v"), buf->dtype)});
    }
    std::vector<Stmt> lanes = lanes_of(body);
    for (int64_t l = 0; l < V; ++l) {
      for (const auto& [b, i, a] : arrays) {
        Expr lane_index = simplify(substitute(i, last, Var::make(i64_t(), last) + make_int(l)));
        lanes[size_t(l)] = ReadArray(b, lane_index, Load::make(a, make_int(l))).mutate(lanes[size_t(l)]);
      }
    }
    std::vector<Stmt> fills;
    for (const auto& [b, i, a] : arrays) {
      fills.push_back(Store::make(a, Ramp::make(make_int(0), make_int(1), int(V)),
                                  Load::make(b, Ramp::make(i, make_int(1), int(V)))));
    }
    Stmt out = Block::make({Block::make(fills), Block::make(lanes)});
    for (const auto& [b, i, a] : arrays) out = Allocate::make(a, make_int(V), MemoryScope::Stack, out);
    return std::pair{simplify(cond), out};
  }

  // Whether `e` is a sum of terms each the variable times factors free of it.
  static bool linear_in(const Expr& e, const std::string& var) {
    if (!vars_of(e).count(var)) return true;
    if (const Var* v = e.as<Var>()) return v->name == var;
    if (const Binary* b = e.as<Binary>()) {
      if (b->op == BinOp::Add || b->op == BinOp::Sub) {
        return linear_in(b->a, var) && linear_in(b->b, var);
      }
      if (b->op == BinOp::Mul) {
        if (!vars_of(b->a).count(var)) return linear_in(b->b, var);
        if (!vars_of(b->b).count(var)) return linear_in(b->a, var);
      }
    }
    return false;
  }

  // Loads of `buf` at `index` read `value` instead.
  class ReadArray : public IRMutator {
   public:
    ReadArray(Buf buf, Expr index, Expr value)
        : buf_(std::move(buf)), index_(std::move(index)), value_(std::move(value)) {}

   protected:
    using IRMutator::visit;
    Expr visit(const Load* op, const Expr& self) override {
      Expr e = IRMutator::visit(op, self);
      const Load* l = e.as<Load>();
      if (l->buf.get() != buf_.get() || l->predicate.defined() || l->index.type().lanes != 1 ||
          !equal(simplify(l->index), index_)) {
        return e;
      }
      return value_;
    }

   private:
    Buf buf_;
    Expr index_, value_;
  };

  // Stores to the staged buffers go to lane `l` of their small array.
  class StageStores : public IRMutator {
   public:
    StageStores(const std::map<const BufferNode*, Buf>& staged, Expr lane)
        : staged_(staged), lane_(std::move(lane)) {}

   protected:
    using IRMutator::visit;
    Stmt visit(const Store* op, const Stmt& self) override {
      Stmt s = IRMutator::visit(op, self);
      const Store* st = s.as<Store>();
      auto it = staged_.find(st->buf.get());
      if (it == staged_.end()) return s;
      return Store::make(it->second, lane_, st->value);
    }

   private:
    const std::map<const BufferNode*, Buf>& staged_;
    Expr lane_;
  };

  const Kernel& k_;
  Names names_;
  const GpuScheduleOptions& o_;
  int64_t threads_ = 256, lanes_ = 4;
  std::set<std::string> scalars_;
  Expr blk_, thr_, e_, fits32_;
};

}  // namespace

Kernel gpu_pointwise(const Kernel& k, ir::OpCategory category, const GpuTarget& target,
                     const GpuScheduleOptions& options) {
  if (category != ir::OpCategory::Elementwise && category != ir::OpCategory::Layout) return k;
  if (!k.body.defined() || is_mapped(k.body)) return k;
  std::optional<Kernel> out = Pointwise(k, target, options).run();
  return out ? *out : k;
}

}  // namespace kiln::passes
