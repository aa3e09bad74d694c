// Op table: selection — torch.sort / argsort / msort / topk / kthvalue /
// median / nanmedian (and their Tensor methods) onto the registry's sort,
// topk, kthvalue, median and nanmedian ops (ir/ops/selection.cpp). Results with indices are
// (values, indices) tuples, readable as .values / .indices like PyTorch's
// named tuples. Sorting is always stable (stable= is accepted and changes
// nothing), which is one of the orders PyTorch's unstable sort may give.
#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

const unsigned TM = kTorch | kMethod;

Val pair(Bound& b, const std::string& op, ir::Value* x, ir::Attrs attrs) {
  std::vector<ir::Value*> outs = b.L.apply(op, {x}, std::move(attrs), b.call.callee);
  return Val::tuple({b.L.fresh(outs.at(0)), b.L.fresh(outs.at(1))});
}

ir::Attrs sort_attrs(Bound& b, int64_t dim) {
  return {{"dim", dim}, {"descending", b.bool_("descending")}, {"stable", b.bool_("stable")}};
}

}  // namespace

void add_selection_ops(std::vector<OpEntry>& t) {
  t.push_back({"sort", TM, "input, dim=-1, descending=False, *, stable=False", [](Bound& b) {
                 return pair(b, "sort", b.tensor("input"), sort_attrs(b, b.int_("dim")));
               }});
  t.push_back({"argsort", TM, "input, dim=-1, descending=False, *, stable=False", [](Bound& b) {
                 return pair(b, "sort", b.tensor("input"), sort_attrs(b, b.int_("dim"))).items[1];
               }});
  t.push_back({"msort", TM, "input", [](Bound& b) {
                 ir::Attrs a{{"dim", int64_t{0}}, {"descending", false}, {"stable", false}};
                 return pair(b, "sort", b.tensor("input"), a).items[0];
               }});
  t.push_back({"topk", TM, "input, k, dim=-1, largest=True, sorted=True", [](Bound& b) {
                 return pair(b, "topk", b.tensor("input"),
                             {{"k", b.int_("k")},
                              {"dim", b.int_("dim")},
                              {"largest", b.bool_("largest")},
                              {"sorted", b.bool_("sorted")}});
               }});
  t.push_back({"kthvalue", TM, "input, k, dim=-1, keepdim=False", [](Bound& b) {
                 return pair(
                     b, "kthvalue", b.tensor("input"),
                     {{"k", b.int_("k")}, {"dim", b.int_("dim")}, {"keepdim", b.bool_("keepdim")}});
               }});
  // median and nanmedian (NaNs left out): the lower median.
  for (const char* op : {"median", "nanmedian"}) {
    t.push_back({op, TM, "input, dim=None, keepdim=False", [op](Bound& b) {
                   ir::Value* x = b.tensor("input");
                   if (b.is_none("dim")) {
                     // The lower median of all elements: a 0-dim tensor, no index.
                     if (b.bool_("keepdim")) b.fail("keepdim", "keepdim needs a dim");
                     ir::Value* flat = b.L.apply1(
                         "reshape", {x}, {{"shape", std::vector<int64_t>{-1}}}, b.call.callee);
                     return pair(b, op, flat, {{"dim", int64_t{0}}, {"keepdim", false}}).items[0];
                   }
                   return pair(b, op, x, {{"dim", b.int_("dim")}, {"keepdim", b.bool_("keepdim")}});
                 }});
  }
}

}  // namespace kiln::frontend
