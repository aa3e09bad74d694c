// Measured autotuning (see autotune.h and docs/autotune.md). For each group
// with a contraction node:
//
//   1. the node alone becomes a small graph with concrete sizes (symbolic dims
//      bound from CompileOptions::example_shapes; without them: not tuned);
//   2. the tuning cache is asked under a key text naming the problem and the
//      machine; a usable record decides without any timing;
//   3. otherwise the reference output is made once ("naive", the plain loop
//      nest the test suite checks against the interpreter; the interpreter
//      when naive does not apply), then each applicable candidate is compiled
//      with that algorithm forced, run once (warm-up, output checked against
//      the reference within a tolerance for the dtype and the reduction
//      length) and timed best-of-N while the node's budget lasts;
//   4. the fastest correct candidate wins, and the record is stored.
//
// Order of step 3: naive (it is also a candidate), then the heuristic's
// choice, then the others by falling score. The first two are always timed,
// so a tiny budget can only improve on the heuristic, never lose it.
//
// Assumes: groups from passes::group_kernels with choose_algorithms run.
// Guarantees: a group's algorithm name stays among its applicable candidates,
// and a candidate whose output differed from the reference is never chosen.
#include "api/autotune.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>

#include "ir/interpreter.h"
#include "kiln/error.h"
#include "runtime/tuning_cache.h"

namespace kiln::compile_detail {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Timed runs after the warm-up, at most (best of these is the time).
constexpr int kMaxReps = 5;
// The reference candidate; also the fallback nobody can reject.
constexpr const char* kReference = "naive";

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "on" || s == "yes";
}

// --- symbolic dims ------------------------------------------------------------------------

using Bindings = std::map<std::string, int64_t>;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Symbol -> size from the example shapes; kiln::Error when they do not fit.
Bindings bind_symbols(const ir::Graph& g, const CompileOptions& o) {
  Bindings b;
  if (o.example_shapes.empty()) return b;
  KILN_USER_CHECK(o.example_shapes.size() == g.inputs().size(),
                  "compile: example_shapes has " << o.example_shapes.size() << " shapes, @"
                                                 << g.name() << " takes " << g.inputs().size()
                                                 << " inputs");
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* v = g.input(i);
    const std::vector<int64_t>& shape = o.example_shapes[i];
    if (!v->type().is_tensor()) continue;  // scalars have no sizes to bind
    const ir::Dims& dims = v->type().dims();
    auto fail = [&](const std::string& why) {
      KILN_USER_ERROR("compile: example_shapes[" << i << "] " << shape_text(shape)
                                                 << " does not fit input " << v->name() << ": "
                                                 << v->type().str() << " (" << why << ")");
    };
    if (shape.size() != dims.size()) fail("rank");
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d].is_static()) {
        if (dims[d].value != shape[d]) fail("dim " + std::to_string(d));
        continue;
      }
      auto [it, fresh] = b.emplace(dims[d].symbol, shape[d]);
      if (!fresh && it->second != shape[d]) {
        fail(dims[d].symbol + " is " + std::to_string(it->second) + " in an earlier input");
      }
    }
  }
  return b;
}

// --- the node as a problem of its own -----------------------------------------------------

struct Problem {
  std::shared_ptr<ir::Graph> graph;  // the node alone, every dim concrete
  std::string key;                   // the tuning cache's key text
  std::string bound;                 // "N=32": the symbols its sizes came from
  double k = 1;                      // multiply-adds per output element (tolerance)
  std::string why_not;               // non-empty: it cannot be tuned
};

// Multiply-adds behind one output element: the reduction length.
double reduction_length(const ir::Node& n) {
  auto dims = [&](size_t i) { return n.input(i)->type().dims(); };
  const std::string& op = n.op();
  if ((op == "matmul" || op == "bmm" || op == "linear") && !dims(0).empty()) {
    return double(dims(0).back().value);
  }
  if (op == "conv2d" && dims(1).size() == 4) {
    return double(dims(1)[1].value * dims(1)[2].value * dims(1)[3].value);
  }
  // An op this file does not know: the largest input dim bounds it loosely.
  double k = 1;
  for (const ir::Value* v : n.inputs()) {
    if (!v->type().is_tensor()) continue;
    for (const ir::Dim& d : v->type().dims()) k = std::max(k, double(d.value));
  }
  return k;
}

Problem make_problem(const ir::Node& n, const Bindings& symbols,
                     const std::vector<std::string>& candidates, const CompileOptions& o,
                     const std::string& backend, const passes::CpuTarget& target) {
  Problem p;
  auto sub = std::make_shared<ir::Graph>("tune_" + n.op());
  std::vector<ir::Value*> inputs;
  std::vector<std::string> unbound;
  std::map<std::string, int64_t> used;
  std::string in_text;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    const ir::Value* v = n.input(i);
    const ir::Node* producer = v->producer();
    if (i) in_text += ", ";
    if (producer && producer->op() == "constant") {
      // Kept a constant: a candidate may transform constant weights at compile time.
      inputs.push_back(sub->apply1("constant", {}, producer->attrs()));
      in_text += "constant " + v->type().str();
      continue;
    }
    if (!v->type().is_tensor()) {
      p.why_not = "a scalar operand computed at run time";
      return p;
    }
    ir::TensorType t = v->type().tensor_type();
    for (ir::Dim& d : t.dims) {
      if (d.is_static()) continue;
      auto it = symbols.find(d.symbol);
      if (it == symbols.end()) {
        if (std::find(unbound.begin(), unbound.end(), d.symbol) == unbound.end()) {
          unbound.push_back(d.symbol);
        }
        continue;
      }
      used[d.symbol] = it->second;
      d = ir::Dim(it->second);
    }
    inputs.push_back(sub->add_input("in" + std::to_string(i), ir::Type::tensor(t)));
    in_text += t.str();
  }
  if (!unbound.empty()) {
    std::string names;
    for (const std::string& s : unbound) names += (names.empty() ? "" : ", ") + s;
    p.why_not = "symbolic dims " + names + " (give example input shapes to tune)";
    return p;
  }
  for (const auto& [sym, size] : used) {
    p.bound += (p.bound.empty() ? "" : ", ") + sym + "=" + std::to_string(size);
  }
  try {
    sub->set_outputs(sub->apply(n.op(), inputs, n.attrs(), n.loc()));
    ir::verify(*sub);
  } catch (const Error& e) {
    p.why_not = std::string("its sizes do not check out: ") + e.what();
    return p;
  }
  p.k = reduction_length(*sub->nodes().back());
  p.graph = sub;

  // Everything the timings depend on: the problem, the candidates, the code
  // generator's settings and the machine.
  std::string cands;
  for (const std::string& c : candidates) cands += (cands.empty() ? "" : ",") + c;
  p.key = "kiln " KILN_VERSION "; cpu " + host_cpu_name() + " " + target.str() + "; backend " +
          backend + " O" + std::to_string(o.opt_level) + (o.fast_math ? " fast-math" : "") +
          (o.schedule ? "" : " unscheduled") + "; " + n.op() + "(" + in_text + ")" +
          (n.attrs().empty() ? "" : " " + n.attrs().str()) + " -> " +
          sub->outputs().at(0)->type().str() + "; candidates " + cands;
  return p;
}

// --- inputs, reference and comparison -----------------------------------------------------

// Seeded values of `t`'s dtype: normal for floats, small integers (exact in
// every accumulator) for integers, coin flips for bool.
Tensor random_tensor(const ir::TensorType& t, uint64_t seed) {
  Shape shape = ir::static_shape(t.dims);
  if (is_floating(t.dtype)) return Tensor::randn(shape, seed, t.dtype);
  Tensor x = Tensor::randn(shape, seed, DType::F64);
  double* p = x.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = std::nearbyint(p[i] * 1.5);
    if (t.dtype == DType::Bool) v = p[i] > 0;
    if (!is_signed(t.dtype)) v = std::fabs(v);
    p[i] = std::clamp(v, -3.0, 3.0);
  }
  return x.to(t.dtype);
}

double max_abs(const Tensor& t) {
  if (t.numel() == 0) return 0;
  Tensor x = t.contiguous().to(DType::F64);
  const double* p = x.data<double>();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isfinite(p[i])) m = std::max(m, std::fabs(p[i]));
  }
  return m;
}

// The unit roundoff of a dtype (half an ulp at 1).
double unit_roundoff(DType t) {
  switch (t) {
    case DType::F16:
      return std::ldexp(1.0, -11);
    case DType::BF16:
      return std::ldexp(1.0, -8);
    case DType::F32:
      return std::ldexp(1.0, -24);
    case DType::F64:
      return std::ldexp(1.0, -53);
    default:
      return 0;
  }
}

// How far a candidate's output may lie from the reference's (docs/autotune.md):
// floats: |out - ref| <= 4 u_out |ref| + 4 K u_acc S per element, where u_out
// is the output dtype's unit roundoff (both sides round once into it: up to
// an ulp apart, 2 u), u_acc the accumulator's (f32 for f16/bf16/f32, f64 for
// f64: two summation orders of K products differ by at most about 2 K u_acc
// times the sum of |products|), and S bounds one product's size (max|a| *
// max|b|, plus max|bias|). Integers and bool: equal.
struct Tolerance {
  double rel = 0, abs = 0;
};

Tolerance tolerance(DType out, double k, double scale) {
  Tolerance t;
  if (!is_floating(out)) return t;
  DType acc = out == DType::F64 ? DType::F64 : DType::F32;
  t.rel = 4 * unit_roundoff(out);
  t.abs = 4 * k * unit_roundoff(acc) * scale;
  return t;
}

// Empty when `out` matches `ref` within `tol`; else what is wrong.
std::string mismatch(const Tensor& out, const Tensor& ref, const Tolerance& tol) {
  if (out.sizes() != ref.sizes() || out.dtype() != ref.dtype()) {
    return "output " + shape_text(out.sizes()) + " " + dtype_name(out.dtype()) + ", reference " +
           shape_text(ref.sizes()) + " " + dtype_name(ref.dtype());
  }
  Tensor x = out.contiguous().to(DType::F64), y = ref.contiguous().to(DType::F64);
  const double* px = x.data<double>();
  const double* py = y.data<double>();
  double worst = 0, worst_tol = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i]) && std::isnan(py[i])) continue;
    if (px[i] == py[i]) continue;  // equal infinities too
    double err = std::isnan(px[i]) || std::isnan(py[i]) ? INFINITY : std::fabs(px[i] - py[i]);
    double allowed = tol.rel * std::fabs(py[i]) + tol.abs;
    if (!(err <= allowed) && (at < 0 || err - allowed > worst - worst_tol)) {
      worst = err, worst_tol = allowed, at = i;
    }
  }
  if (at < 0) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "max |error| %.3g > tolerance %.3g at element %lld", worst,
                worst_tol, static_cast<long long>(at));
  return buf;
}

// --- measuring ---------------------------------------------------------------------------

struct Trial {
  std::string name;
  double score = 0;
  double seconds = -1;  // best time; < 0: not timed
  bool rejected = false;
  std::string note;  // why rejected
};

struct Measurement {
  std::vector<Trial> trials;  // in the order they were timed
  std::vector<std::string> untimed;
  std::string reference;  // "naive" or "the interpreter"
};

Measurement measure(const Problem& p, const passes::AlgorithmChoice& choice,
                    const CompileOptions& options, const std::string& backend, double budget,
                    AutotuneReport& report) {
  Clock::time_point start = Clock::now();
  Measurement m;
  // naive first (the reference), then the heuristic's pick, then by score.
  std::vector<const passes::AlgorithmCandidate*> order;
  for (const passes::AlgorithmCandidate& c : choice.candidates) {
    if (c.applies) order.push_back(&c);
  }
  auto rank = [&](const passes::AlgorithmCandidate* c) {
    return c->name == kReference ? 0 : c->name == choice.name ? 1 : 2;
  };
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a->score > b->score;
  });

  std::vector<Tensor> inputs;
  std::vector<Tensor> operands;  // every tensor operand (inputs and constants), in order
  for (size_t i = 0; i < p.graph->inputs().size(); ++i) {
    inputs.push_back(random_tensor(p.graph->input(i)->type().tensor_type(), 0x6b696c6e + i));
  }
  {
    size_t next_input = 0;
    const ir::Node& node = *p.graph->nodes().back();
    for (const ir::Value* v : node.inputs()) {
      const ir::Node* producer = v->producer();
      if (!v->type().is_tensor()) continue;
      if (!producer) {
        operands.push_back(inputs.at(next_input++));
      } else if (const ir::AttrValue* a = producer->attrs().find("value")) {
        if (const Tensor* t = std::get_if<Tensor>(a)) operands.push_back(*t);
      }
    }
  }
  double scale = 1;
  if (operands.size() >= 2) scale = max_abs(operands[0]) * max_abs(operands[1]);
  if (operands.size() >= 3) scale += max_abs(operands[2]);

  CompileOptions co = options;
  co.autotune = false;
  co.optimize = false;  // the node alone: nothing to fold, and it must stay as it is
  co.example_shapes.clear();

  std::vector<Tensor> reference;
  bool has_reference = false;
  if (order.empty() || order.front()->name != kReference) {
    reference = ir::interpret(*p.graph, inputs);
    has_reference = true;
    m.reference = "the interpreter";
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const passes::AlgorithmCandidate& c = *order[i];
    bool mandatory = rank(&c) < 2;
    if (!mandatory && since(start) >= budget) {
      m.untimed.push_back(c.name);
      continue;
    }
    Trial t;
    t.name = c.name;
    t.score = c.score;
    try {
      CompiledFunction f =
          CompiledFunction::from_impl(build_with_algorithm(*p.graph, co, backend, c.name));
      Clock::time_point t0 = Clock::now();
      std::vector<Tensor> out = f(inputs);
      double warm = since(t0);
      if (!has_reference) {  // c is naive
        reference = out;
        has_reference = true;
        m.reference = kReference;
      } else {
        Tolerance tol = tolerance(out.at(0).dtype(), p.k, scale);
        for (size_t o = 0; o < out.size() && !t.rejected; ++o) {
          std::string why = mismatch(out[o], reference.at(o), tol);
          if (!why.empty()) t.rejected = true, t.note = why + " vs " + m.reference;
        }
      }
      if (!t.rejected) {
        t.seconds = warm;
        for (int r = 0; r < kMaxReps; ++r) {
          // At least one run after the warm-up, then while the budget lasts.
          if (r == 0 ? warm > budget : since(start) + t.seconds > budget) break;
          Clock::time_point t1 = Clock::now();
          f(inputs);
          t.seconds = std::min(t.seconds, since(t1));
        }
        ++report.candidates_timed;
      }
    } catch (const std::exception& e) {
      t.rejected = true;
      t.note = std::string("failed: ") + e.what();
      if (c.name == kReference && !has_reference) {
        reference = ir::interpret(*p.graph, inputs);
        has_reference = true;
        m.reference = "the interpreter";
      }
    }
    m.trials.push_back(std::move(t));
  }
  return m;
}

// --- choices, records and reasons ---------------------------------------------------------

std::string when_text(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "an unknown date";
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string budget_text(double budget) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", budget);
  return buf;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Copies a record's times and verdicts onto the candidates.
void fill_candidates(passes::AlgorithmChoice& choice, const runtime::TuningRecord& r) {
  for (passes::AlgorithmCandidate& c : choice.candidates) {
    for (const runtime::TuningMeasurement& t : r.candidates) {
      if (t.name != c.name) continue;
      c.seconds = t.seconds;
      c.rejected = t.rejected;
      if (!c.rejected && c.seconds < 0) c.tuning_note = "not timed (budget " + budget_text(r.budget_s) + " spent)";
    }
  }
}

// A stored record decides when its winner is still an applicable, correct
// candidate and it was measured with at least this budget (or completely).
bool usable(const runtime::TuningRecord& r, const std::vector<std::string>& names, double budget) {
  if (std::find(names.begin(), names.end(), r.choice) == names.end()) return false;
  for (const runtime::TuningMeasurement& t : r.candidates) {
    if (t.name == r.choice && (t.rejected || t.seconds < 0)) return false;
  }
  return r.complete || r.budget_s >= budget;
}

void apply_record(passes::AlgorithmChoice& choice, const runtime::TuningRecord& r) {
  choice.name = r.choice;
  fill_candidates(choice, r);
  choice.reason = "tuning cache: " + r.choice + " (measured " +
                  format_seconds(r.choice_seconds()) + " on " + when_text(r.measured_at) +
                  (r.note.empty() ? "" : ", at " + r.note) + ")";
}

// The record of a measurement, or nothing when no candidate was correct.
std::optional<runtime::TuningRecord> record_of(const Measurement& m, double budget,
                                               const std::string& bound) {
  const Trial* best = nullptr;
  for (const Trial& t : m.trials) {
    if (t.rejected || t.seconds < 0) continue;
    if (!best || t.seconds < best->seconds) best = &t;
  }
  if (!best) return std::nullopt;
  runtime::TuningRecord r;
  r.choice = best->name;
  for (const Trial& t : m.trials) r.candidates.emplace_back(t.name, t.seconds, t.rejected);
  for (const std::string& u : m.untimed) r.candidates.emplace_back(u, -1, false);
  r.measured_at = static_cast<int64_t>(std::time(nullptr));
  r.budget_s = budget;
  r.complete = m.untimed.empty();
  r.note = bound;
  return r;
}

// "autotuned: gemm.packed 1.92 ms < gemm.small 3.10 ms < naive 410 ms; ..."
std::string measured_reason(const Measurement& m, double budget, const std::string& bound) {
  std::vector<const Trial*> timed;
  std::vector<std::string> rejected;
  for (const Trial& t : m.trials) {
    if (t.rejected) {
      rejected.push_back(t.name);
    } else if (t.seconds >= 0) {
      timed.push_back(&t);
    }
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Trial* a, const Trial* b) { return a->seconds < b->seconds; });
  std::string s = "autotuned" + (bound.empty() ? "" : " at " + bound) + ": ";
  for (size_t i = 0; i < timed.size(); ++i) {
    s += (i ? " < " : "") + timed[i]->name + " " + format_seconds(timed[i]->seconds);
  }
  if (!rejected.empty()) s += "; rejected (output differs from " + m.reference + "): " + join(rejected);
  if (!m.untimed.empty()) s += "; not timed (budget " + budget_text(budget) + " spent): " + join(m.untimed);
  return s;
}

// The contraction node of a group (the last one with candidates, as choose_algorithms).
const ir::Node* contraction_of(const passes::KernelGroup& grp) {
  const ir::Node* found = nullptr;
  for (const ir::Node* n : grp.nodes) {
    if (passes::has_algorithms(n->op())) found = n;
  }
  return found;
}

void not_tuned(passes::AlgorithmChoice& choice, const std::string& why, AutotuneReport& report) {
  choice.reason += "; not tuned: " + why;
  ++report.kept_heuristic;
}

}  // namespace

bool autotune_requested(const CompileOptions& options) {
  return options.autotune || env_on("KILN_AUTOTUNE");
}

std::string format_seconds(double seconds) {
  char buf[32];
  double ms = seconds * 1e3;
  if (seconds >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  } else if (seconds >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  } else if (ms >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  } else if (ms >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  } else if (ms >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  } else if (ms >= 0.1) {
    std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g us", ms * 1e3);
  }
  return buf;
}

AutotuneReport autotune_groups(const ir::Graph& g, std::vector<passes::KernelGroup>& groups,
                               const CompileOptions& options, const std::string& backend,
                               const passes::CpuTarget& target) {
  Clock::time_point start = Clock::now();
  AutotuneReport report;
  Bindings symbols = bind_symbols(g, options);
  runtime::TuningCache& cache = runtime::TuningCache::global();
  const double budget = options.autotune_budget_s;
  for (passes::KernelGroup& grp : groups) {
    passes::AlgorithmChoice& choice = grp.algorithm;
    const ir::Node* n = contraction_of(grp);
    if (choice.name.empty() || !n) continue;
    ++report.contractions;
    if (!options.cpu.empty()) {
      not_tuned(choice, "code is generated for cpu '" + options.cpu + "', not this host", report);
      continue;
    }
    std::vector<std::string> names;
    for (const passes::AlgorithmCandidate& c : choice.candidates) {
      if (c.applies) names.push_back(c.name);
    }
    Problem p = make_problem(*n, symbols, names, options, backend, target);
    if (!p.why_not.empty()) {
      not_tuned(choice, p.why_not, report);
      continue;
    }
    if (std::optional<runtime::TuningRecord> r = cache.load(p.key, options.disk_cache);
        r && usable(*r, names, budget)) {
      apply_record(choice, *r);
      ++report.from_cache;
      continue;
    }
    Measurement m = measure(p, choice, options, backend, budget, report);
    std::optional<runtime::TuningRecord> r = record_of(m, budget, p.bound);
    for (passes::AlgorithmCandidate& c : choice.candidates) {
      for (const Trial& t : m.trials) {
        if (t.name != c.name) continue;
        c.seconds = t.seconds;
        c.rejected = t.rejected;
        c.tuning_note = t.note;
      }
      if (std::find(m.untimed.begin(), m.untimed.end(), c.name) != m.untimed.end()) {
        c.tuning_note = "not timed (budget " + budget_text(budget) + " spent)";
      }
    }
    if (!r) {
      not_tuned(choice, "no candidate matched " + m.reference, report);
      continue;
    }
    choice.name = r->choice;
    choice.reason = measured_reason(m, budget, p.bound);
    cache.store(p.key, *r, options.disk_cache);
    ++report.measured;
  }
  report.seconds = since(start);
  return report;
}

}  // namespace kiln::compile_detail
