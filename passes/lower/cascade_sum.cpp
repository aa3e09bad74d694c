// Blocked (cascade) summation: see cascade_sum.h for the nest it builds.
#include "passes/lower/cascade_sum.h"

#include "ir/loop/simplify.h"

namespace kiln::passes::lower {
namespace {

using namespace kiln::loop;  // NOLINT

constexpr int64_t kInnerBlock = 1024;  // terms per partial on the innermost dim
constexpr int64_t kOuterBlock = 64;    // iterations per partial on an outer dim
constexpr int64_t kGroup = 64;         // partials per next-level partial
constexpr int kMaxLevels = 3;          // levels of grouping above the blocks

class Cascade {
 public:
  Cascade(LowerContext& ctx, const std::vector<Expr>& dims, const std::vector<Scratch>& accs,
          const SumTerms& add, const std::string& prefix)
      : ctx_(ctx), dims_(dims), accs_(accs), add_(add), prefix_(prefix) {}

  // Sums dims [d, rank) into `into` at the reduced index prefix `idx`. An
  // inner dim sums into a fresh partial first, so the partial of a block of
  // an outer dim adds 64 such sums, not 64 times their terms.
  Stmt dim(size_t d, const std::vector<Scratch>& into, const Index& idx) {
    if (d == dims_.size()) return add_(idx, into);
    if (d == 0) return sum_dim(d, into, idx);
    std::vector<Scratch> part = partials();
    return allocate(part, Block::make({zero(part), sum_dim(d, part, idx), add_into(into, part)}));
  }

 private:
  Stmt sum_dim(size_t d, const std::vector<Scratch>& into, const Index& idx) {
    const Expr& extent = dims_[d];
    const int64_t block = d + 1 == dims_.size() ? kInnerBlock : kOuterBlock;
    int64_t e = 0;
    const bool known = is_const_int(extent, &e);
    if (known && e <= block) {
      Expr v = ctx_.loop_var(prefix_);
      return For::make(v, make_int(0), extent, ForKind::Serial, dim(d + 1, into, with(idx, v)));
    }
    Expr blocks = simplify((extent + (block - 1)) / make_int(block));
    // Levels of 64-way grouping above the blocks: as many as a static count
    // needs, at most kMaxLevels (a symbolic count's top loop adds one
    // partial per 64^kMaxLevels blocks).
    int levels = kMaxLevels;
    if (known) {
      levels = 1;
      for (int64_t span = kGroup; span * block < e && levels < kMaxLevels; span *= kGroup) ++levels;
    }
    return group_of(d, into, idx, blocks, make_int(0), levels, block, true);
  }

  // Blocks [first, first + 64^levels) of dim d, up to `blocks`, summed into
  // a fresh partial and then into `into` (straight into `into` at the top).
  Stmt group_of(size_t d, const std::vector<Scratch>& into, const Index& idx, const Expr& blocks,
                const Expr& first, int levels, int64_t block, bool top) {
    if (levels == 0) return block_of(d, into, idx, first, block);
    int64_t span = 1;  // blocks per iteration of this level's loop
    for (int l = 1; l < levels; ++l) span *= kGroup;
    Expr v = ctx_.loop_var(prefix_ + "g");
    Expr count = (blocks - first + (span - 1)) / make_int(span);
    Expr extent = top ? simplify(count) : min(make_int(kGroup), count);
    std::vector<Scratch> part = top ? into : partials();
    Stmt loop =
        For::make(v, make_int(0), extent, ForKind::Serial,
                  group_of(d, part, idx, blocks, first + v * span, levels - 1, block, false));
    if (top) return loop;
    return allocate(part, Block::make({zero(part), loop, add_into(into, part)}));
  }

  // One block (number `b`) of dim d summed into a fresh partial, then into `into`.
  Stmt block_of(size_t d, const std::vector<Scratch>& into, const Index& idx, const Expr& b,
                int64_t block) {
    std::vector<Scratch> part = partials();
    Expr i = ctx_.loop_var(prefix_);
    Expr start = b * block;
    Expr extent = min(make_int(block), dims_[d] - start);
    Stmt terms =
        For::make(i, make_int(0), extent, ForKind::Serial, dim(d + 1, part, with(idx, start + i)));
    return allocate(part, Block::make({zero(part), terms, add_into(into, part)}));
  }

  std::vector<Scratch> partials() {
    std::vector<Scratch> out;
    for (const Scratch& a : accs_) out.push_back(make_scratch(ctx_, "part", a.buf->dtype));
    return out;
  }
  static Stmt zero(const std::vector<Scratch>& s) {
    std::vector<Stmt> stores;
    for (const Scratch& a : s) stores.push_back(a.store(make_zero({a.buf->dtype, 1})));
    return Block::make(stores);
  }
  static Stmt add_into(const std::vector<Scratch>& into, const std::vector<Scratch>& part) {
    std::vector<Stmt> stores;
    for (size_t k = 0; k < into.size(); ++k) {
      stores.push_back(into[k].store(into[k].load() + part[k].load()));
    }
    return Block::make(stores);
  }
  static Index with(Index idx, const Expr& v) {
    idx.push_back(v);
    return idx;
  }

  LowerContext& ctx_;
  const std::vector<Expr>& dims_;
  const std::vector<Scratch>& accs_;
  const SumTerms& add_;
  const std::string& prefix_;
};

}  // namespace

Stmt summing_nest(LowerContext& ctx, const std::vector<Expr>& dims,
                  const std::vector<Scratch>& accs, const SumTerms& add,
                  const std::string& prefix) {
  bool blocked = ctx.options().target.is_cpu() && !accs.empty();
  for (const Scratch& a : accs) blocked = blocked && is_floating(a.buf->dtype);
  if (!blocked) {
    return loop_nest(
        ctx, dims, [&](const Index& r) { return add(r, accs); }, prefix);
  }
  return Cascade(ctx, dims, accs, add, prefix).dim(0, accs, {});
}

}  // namespace kiln::passes::lower
