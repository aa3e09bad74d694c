// kiln::compile and CompiledFunction: the compile pipeline as one readable
// list (verify -> fuse -> lower -> schedule -> simplify -> codegen -> executable), the
// call path, and the dump stages. Everything is compiled inside compile();
// a call only checks inputs, plans buffers and launches.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>

#include "api/autotune.h"
#include "api/backends.h"
#include "api/compile_internal.h"
#include "api/convert.h"
#include "api/target.h"
#include "ir/interpreter.h"
#include "ir/loop/simplify.h"
#include "ir/loop/visitor.h"
#include "kiln/error.h"
#include "passes/fuse.h"
#include "passes/pipeline.h"
#include "passes/schedule/loop_pipeline.h"
#include "runtime/device.h"

namespace kiln {

// ------------------------------------------------------------------------------- tables

const std::vector<DumpStageInfo>& dump_stages() {
  // compile()'s own stages, then each backend's, then the kernel grouping.
  static const std::vector<DumpStageInfo> stages = [] {
    std::vector<DumpStageInfo> s = {
        {"loops", "loop IR as lowered from the graph, one kernel per group, unscheduled"},
        {"loops-scheduled",
         "loop IR after the loop pipeline (CPU: vectorize, parallelize; GPU: mapped to "
         "blocks and threads) and simplification"},
        {"plan", "the launch list: buffer slots with sizes and live ranges, kernel arguments"},
    };
    for (const api::Backend& b : api::backend_registry()) {
      s.insert(s.end(), b.stages.begin(), b.stages.end());
    }
    s.push_back(
        {"kernels", "the graph grouped into kernels (after fusion), with the reason for each"});
    return s;
  }();
  return stages;
}

namespace {

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string stage_names() {
  std::vector<std::string> names;
  for (const DumpStageInfo& s : dump_stages()) names.push_back(s.name);
  return join_names(names);
}

void check_options(const CompileOptions& o) {
  if (!o.passes.print_after.empty()) passes::check_pass_name(o.passes.print_after);
  KILN_USER_CHECK(o.opt_level >= 0 && o.opt_level <= 3,
                  "compile: opt_level must be 0..3, got " << o.opt_level);
  KILN_USER_CHECK(o.num_threads >= 0,
                  "compile: num_threads must be >= 0 (0: pool default), got " << o.num_threads);
  KILN_USER_CHECK(std::isfinite(o.autotune_budget_s) && o.autotune_budget_s > 0,
                  "compile: autotune_budget_s must be a positive number of seconds, got "
                      << o.autotune_budget_s);
  int cc = 0;
  KILN_USER_CHECK(api::parse_cuda_arch(o.cuda_arch, &cc),
                  "compile: cuda_arch must be sm_ and the compute capability's digits (sm_90, "
                  "sm_120), got '"
                      << o.cuda_arch << "'");
  for (size_t i = 0; i < o.example_shapes.size(); ++i) {
    for (int64_t d : o.example_shapes[i]) {
      KILN_USER_CHECK(d >= 0, "compile: example_shapes[" << i << "] has a negative size " << d);
    }
  }
}

const CompiledFunction::Impl& checked(const std::shared_ptr<const CompiledFunction::Impl>& p) {
  KILN_USER_CHECK(p != nullptr,
                  "CompiledFunction is empty (default-constructed); call "
                  "kiln::compile() to make one");
  return *p;
}

passes::LowerOptions lower_options(const passes::Target& target) {
  passes::LowerOptions lo;
  lo.target = target;
  // The host packs an input view whose innermost stride is not 1 (rare: most
  // views are slices or batch views); a device cannot, so GPU kernels keep
  // every stride a parameter.
  lo.unit_inner_stride = target.is_cpu();
  return lo;
}

// Kernel groups (fusion) with the algorithm of each contraction chosen.
std::vector<passes::KernelGroup> fusion_groups(const ir::Graph& g, const CompileOptions& o,
                                               const passes::Target& target) {
  passes::FusionOptions fo;
  fo.fuse = o.fuse;
  fo.attention = target.is_cpu();  // only the CPU has a fused attention generator
  std::vector<passes::KernelGroup> groups = passes::group_kernels(g, fo);
  passes::choose_algorithms(groups, target);
  return groups;
}

std::vector<loop::Kernel> lower_fused(const ir::Graph& g, const CompileOptions& o,
                                      const passes::Target& target,
                                      std::vector<passes::KernelPlan>* plans) {
  return passes::lower_groups(g, fusion_groups(g, o, target), lower_options(target), plans);
}

// The groups of a compiled function (computed on demand for "interp").
std::vector<passes::KernelGroup> groups_of(const CompiledFunction::Impl& impl) {
  return impl.exec ? impl.groups : fusion_groups(*impl.graph, impl.options, impl.target);
}

std::string score_text(double score) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", score);
  return buf;
}

// The algorithm lines of one kernel: the choice and why, then every
// candidate: whether it applies, the heuristic's score, the measured time or
// the tuner's verdict, and the heuristic's note.
std::string algorithm_text(const passes::AlgorithmChoice& a) {
  std::string s = "  algorithm: " + a.name + " (" + a.reason + ")\n";
  for (const passes::AlgorithmCandidate& c : a.candidates) {
    s += "    candidate " + c.name + ": ";
    if (!c.applies) {
      s += "does not apply";
    } else {
      s += "score " + score_text(c.score);
      if (c.seconds >= 0) s += ", measured " + compile_detail::format_seconds(c.seconds);
      if (c.rejected) {
        s += ", rejected (" +
             (c.tuning_note.empty() ? std::string("wrong result") : c.tuning_note) + ")";
      } else if (!c.tuning_note.empty()) {
        s += ", " + c.tuning_note;
      }
      if (c.name == a.name) s += ", chosen";
    }
    if (!c.note.empty()) s += " - " + c.note;
    s += "\n";
  }
  return s;
}

std::string explain_text(const CompiledFunction::Impl& impl, bool with_nodes) {
  std::vector<passes::KernelGroup> groups = groups_of(impl);
  std::vector<passes::KernelPlan> plans;
  std::vector<loop::Kernel> ks =
      passes::lower_groups(*impl.graph, groups, lower_options(impl.target), &plans);
  ir::ValueNames names(*impl.graph);
  std::string s = "kernels: " + std::to_string(ks.size()) + "\n";
  for (size_t k = 0; k < ks.size(); ++k) {
    s += "kernel " + std::to_string(k) + " " + ks[k].name + " [" +
         ir::category_name(plans[k].category) + ", " + std::to_string(groups[k].nodes.size()) +
         (groups[k].nodes.size() == 1 ? " op" : " ops") + "]\n";
    for (const ir::Node* n : groups[k].nodes) {
      s += "  " + (with_nodes ? ir::node_summary(*n, names) : n->op());
      if (n->loc().known()) s += "  at " + n->loc().str();
      s += "\n";
    }
    for (const ir::Node* n : groups[k].recomputed) {
      // Layout ops become indexing; anything else recomputed (cheap ops over
      // graph inputs and constants) is computed again here.
      const bool layout = n->def() && n->def()->category == ir::OpCategory::Layout;
      s += std::string(layout ? "  (indexing) " : "  (recomputed) ") +
           (with_nodes ? ir::node_summary(*n, names) : n->op());
      if (n->loc().known()) s += "  at " + n->loc().str();
      s += "\n";
    }
    s += "  why: " + groups[k].reason + "\n";
    if (!groups[k].algorithm.name.empty()) s += algorithm_text(groups[k].algorithm);
    // Identical kernels are generated once (api/compile_backend.cpp).
    if (impl.same_code_as.size() == ks.size() && impl.same_code_as[k] != int(k)) {
      s += "  code: same as kernel " + std::to_string(impl.same_code_as[k]) + " (generated once)\n";
    }
  }
  return s;
}

// The loop pipeline for the target (passes/schedule/loop_pipeline.h): CPU
// kernels are scheduled by their category, GPU kernels mapped, then both
// simplified. `print` is where --print-after-all and friends go.
std::vector<loop::Kernel> schedule_kernels(const std::vector<loop::Kernel>& lowered,
                                           const std::vector<passes::KernelPlan>& plans,
                                           const CompileOptions& o, const passes::Target& target,
                                           const passes::PipelineOptions& print = {}) {
  passes::LoopProgram program;
  program.kernels = lowered;
  for (const passes::KernelPlan& p : plans) program.categories.push_back(p.category);
  passes::LoopPipelineOptions lo;
  lo.target = target;
  lo.schedule = o.schedule;
  // The pool cannot be resized per function; one thread means "no parallel loops".
  lo.parallel = o.num_threads != 1;
  lo.unit_inner_strides = lower_options(target).unit_inner_stride;
  passes::run_loop_pipeline(program, lo, print);
  return std::move(program.kernels);
}

}  // namespace

// ------------------------------------------------------------------------------- compile

namespace {

// Every contraction of `groups` runs `algorithm` (an autotuning candidate).
void force_algorithm(std::vector<passes::KernelGroup>& groups, const std::string& algorithm) {
  for (passes::KernelGroup& grp : groups) {
    if (grp.algorithm.name.empty()) continue;
    grp.algorithm.name = algorithm;
    grp.algorithm.reason = "forced: an autotuning candidate";
  }
}

// Leaves every contraction with the heuristic's choice, saying why.
void keep_heuristic(std::vector<passes::KernelGroup>& groups, const std::string& why) {
  for (passes::KernelGroup& grp : groups) {
    if (!grp.algorithm.name.empty()) grp.algorithm.reason += "; " + why;
  }
}

// Everything compile() does, uncached; `forced_algorithm`, when set, replaces
// the choice of every contraction (and no tuning runs).
std::shared_ptr<CompiledFunction::Impl> build(const ir::Graph& source,
                                              const CompileOptions& options,
                                              const api::Backend& backend,
                                              const std::string& forced_algorithm = {}) {
  auto impl = std::make_shared<CompiledFunction::Impl>();
  impl->options = options;
  impl->backend = backend.name;
  impl->device = options.device;

  // 1. A private, verified copy: plans point into it, and the caller's graph
  //    may change or die. The graph pipeline (fold, simplify, CSE, DCE) runs on it.
  std::shared_ptr<ir::Graph> g = source.clone();
  ir::verify(*g);
  const passes::PipelineOptions print = api::pipeline_options(options.passes);
  if (options.optimize) passes::run_pipeline(*g, print);
  impl->graph = g;
  impl->name = g->name();
  for (const auto& v : g->inputs()) impl->inputs.push_back(api::value_info(*v));
  for (const ir::Value* v : g->outputs()) impl->outputs.push_back(api::value_info(*v));
  impl->target = api::target_for(options);
  if (!backend.compile) return impl;  // the interpreter: nothing to lower

  // 2. Group nodes into kernels (elementwise fusion), pick each contraction's
  //    algorithm (heuristic, then measured when autotuning), and lower each
  //    group (constants fold into their users).
  std::vector<passes::KernelPlan> plans;
  impl->groups = fusion_groups(*g, options, impl->target);
  if (!forced_algorithm.empty()) {
    force_algorithm(impl->groups, forced_algorithm);
  } else if (options.autotune && impl->target.is_cpu()) {
    impl->autotune_report =
        compile_detail::autotune_groups(*g, impl->groups, options, backend.name, impl->target);
  } else if (options.autotune) {
    keep_heuristic(impl->groups, "not tuned: autotuning measures CPU kernels only");
  }
  impl->lowered = passes::lower_groups(*g, impl->groups, lower_options(impl->target), &plans);
  for (const passes::KernelPlan& p : plans) impl->categories.push_back(p.category);
  // 3. Schedule and simplify.
  impl->scheduled = schedule_kernels(impl->lowered, plans, options, impl->target, print);
  // 4. Code generation (or evaluator launchers), by the backend.
  compile_detail::KernelEntries entries = backend.compile(*impl);
  // 5. The launch list and buffer plan (generating code only, on a device
  //    that exists: the plan allocates there).
  if (options.load || runtime::device_unavailable_reason(impl->device).empty()) {
    impl->exec = compile_detail::build_executable(*g, plans, entries);
  }
  return impl;
}

// The function-level cache key: the graph's canonical text (every node,
// attribute and constant value) and every option that changes what build()
// makes. Entries live in the same in-memory cache as compiled modules, so
// clearing it forgets both. A tuned function is keyed by the tuning options
// (its choices come from measurements, which the key cannot hold): a tuned and
// an untuned compile never share an entry, and the module keys hold the
// algorithms themselves.
runtime::CacheKey function_key(const ir::Graph& g, const CompileOptions& o,
                               const std::string& backend) {
  runtime::KeyHasher h;
  h.add("kiln-function-v3").add(ir::print_graph(g)).add(backend).add(o.device.str());
  h.add(uint64_t(o.opt_level)).add(uint64_t(o.num_threads)).add(uint64_t(o.schedule));
  h.add(uint64_t(o.fast_math)).add(o.cpu).add(uint64_t(o.fuse)).add(uint64_t(o.optimize));
  h.add(uint64_t(o.autotune)).add(uint64_t(o.load)).add(o.cuda_arch);
  if (o.autotune) {
    uint64_t budget_bits;
    static_assert(sizeof budget_bits == sizeof o.autotune_budget_s);
    std::memcpy(&budget_bits, &o.autotune_budget_s, sizeof budget_bits);
    h.add(budget_bits).add(uint64_t(o.disk_cache)).add(uint64_t(o.example_shapes.size()));
    for (const std::vector<int64_t>& shape : o.example_shapes) {
      h.add(uint64_t(shape.size()));
      for (int64_t d : shape) h.add(uint64_t(d));
    }
  }
  return h.key();
}

}  // namespace

namespace compile_detail {

std::shared_ptr<CompiledFunction::Impl> build_with_algorithm(const ir::Graph& g,
                                                             const CompileOptions& options,
                                                             const std::string& backend,
                                                             const std::string& algorithm) {
  CompileOptions o = options;
  o.autotune = false;
  o.backend = backend;
  return build(g, o, api::select_backend(o), algorithm);
}

}  // namespace compile_detail

CompiledFunction compile(const ir::Graph& source, const CompileOptions& given) {
  check_options(given);
  const api::Backend& backend = api::select_backend(given);
  CompileOptions options = given;
  options.autotune = compile_detail::autotune_requested(given);
  // Printing or timing passes means running them: no cached function.
  const OptimizeOptions& p = options.passes;
  const bool instrumented =
      p.print_after_all || !p.print_after.empty() || p.time_passes || p.verify_each;
  if (!options.use_cache || !backend.compile || instrumented) {
    return CompiledFunction::from_impl(build(source, options, backend));
  }
  // A function compiled before with the same options is reused whole: no
  // clone, lowering or scheduling (a hit costs a print and a hash).
  return CompiledFunction::from_impl(
      runtime::KernelCache::global().get_or_build_as<CompiledFunction::Impl>(
          function_key(source, options, backend.name),
          [&] { return build(source, options, backend); }));
}

CompiledFunction compile(const Function& f, const CompileOptions& options) {
  return compile(f.graph(), options);
}

std::future<CompiledFunction> compile_async(const ir::Graph& g, const CompileOptions& options) {
  // Copy now: the caller's graph need not outlive the background compile.
  std::shared_ptr<const ir::Graph> copy = g.clone();
  return std::async(std::launch::async, [copy, options] { return compile(*copy, options); });
}

std::future<CompiledFunction> compile_async(const Function& f, const CompileOptions& options) {
  return std::async(std::launch::async, [f, options] { return compile(f, options); });
}

// ------------------------------------------------------------------------------- calling

CompiledFunction CompiledFunction::from_impl(std::shared_ptr<const Impl> impl) {
  CompiledFunction f;
  f.impl_ = std::move(impl);
  return f;
}

const std::string& CompiledFunction::name() const {
  return checked(impl_).name;
}
const std::string& CompiledFunction::backend() const {
  return checked(impl_).backend;
}
std::vector<ValueInfo> CompiledFunction::inputs() const {
  return checked(impl_).inputs;
}
std::vector<ValueInfo> CompiledFunction::outputs() const {
  return checked(impl_).outputs;
}
int CompiledFunction::num_kernels() const {
  return int(checked(impl_).scheduled.size());
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) const {
  return run(inputs, nullptr);
}

std::vector<Tensor> CompiledFunction::run(const std::vector<Tensor>& inputs,
                                          CallStats* stats) const {
  const Impl& impl = checked(impl_);
  KILN_USER_CHECK(impl.options.load,
                  "CompiledFunction '" << impl.name
                                       << "' was compiled with CompileOptions::load = false (code "
                                          "generation only, for dumps); compile it with load = "
                                          "true to run it");
  if (!impl.exec) return ir::interpret(*impl.graph, inputs);
  runtime::ExecutableStats es;
  std::vector<Tensor> out = impl.exec->run(inputs, &es);
  if (stats) {
    stats->launches = es.launches;
    stats->skipped = es.skipped;
    stats->reused_buffers = es.reused_buffers;
    stats->allocated_buffers = es.allocated_buffers;
    stats->allocated_bytes = es.allocated_bytes;
    stats->peak_intermediate_bytes = es.peak_intermediate_bytes;
    stats->copies = es.copies;
    stats->copied_bytes = es.copied_bytes;
  }
  return out;
}

// ------------------------------------------------------------------------------- dumps

std::string CompiledFunction::explain() const {
  return explain_text(checked(impl_), /*with_nodes=*/false);
}

std::string CompiledFunction::dump(const std::string& stage) const {
  const Impl& impl = checked(impl_);
  const std::vector<DumpStageInfo>& stages = dump_stages();
  bool known = std::any_of(stages.begin(), stages.end(),
                           [&](const DumpStageInfo& s) { return s.name == stage; });
  KILN_USER_CHECK(known, "dump: unknown stage '" << stage << "' (stages: " << stage_names() << ")");
  // The interpreter backend lowers nothing at compile time; lower on demand.
  auto lowered = [&](std::vector<passes::KernelPlan>* plans) {
    if (impl.exec) return impl.lowered;
    return lower_fused(*impl.graph, impl.options, impl.target, plans);
  };
  if (stage == "kernels") return explain_text(impl, /*with_nodes=*/true);
  if (stage == "loops") return passes::kernels_text(lowered(nullptr));
  if (stage == "plan") {
    // Code generated without its device (load false) has no launch plan: the
    // plan's buffers are placed on a device that exists.
    const std::string device_problem =
        impl.options.load ? std::string() : runtime::device_unavailable_reason(impl.device);
    KILN_USER_CHECK(impl.exec || device_problem.empty(),
                    "dump: stage 'plan' needs a usable device, and "
                        << impl.device.str() << " is unavailable: " << device_problem);
    KILN_USER_CHECK(impl.exec,
                    "dump: stage 'plan' needs a compiled backend (this function runs "
                    "on the '"
                        << impl.backend << "' backend)");
    return impl.exec->describe();
  }
  std::vector<loop::Kernel> scheduled = impl.scheduled;
  if (!impl.exec) {
    std::vector<passes::KernelPlan> plans;
    std::vector<loop::Kernel> ks = lowered(&plans);
    scheduled = schedule_kernels(ks, plans, impl.options, impl.target);
  }
  if (stage == "loops-scheduled") return passes::kernels_text(scheduled);
  // A backend's stage: generated on demand by that backend, for any function
  // whose code it could run (LLVM IR of a loop-eval function, say).
  for (const api::Backend& b : api::backend_registry()) {
    bool owns = std::any_of(b.stages.begin(), b.stages.end(),
                            [&](const DumpStageInfo& s) { return s.name == stage; });
    if (!owns) continue;
    std::string why = b.generation_problem();
    KILN_USER_CHECK(why.empty(), "dump: stage '" << stage << "' needs the " << b.name
                                                 << " backend, which is unavailable: " << why);
    KILN_USER_CHECK(b.serves(impl.target.kind),
                    "dump: stage '" << stage << "' shows " << b.name
                                    << " code, and this function's kernels are "
                                    << passes::target_kind_name(impl.target.kind)
                                    << " code (it runs on " << impl.device.str() << ")");
    return b.dump(impl, scheduled, stage);
  }
  throw InternalError("dump: stage '" + stage + "' has no producer");
}

}  // namespace kiln
