// Measured autotuning (see autotune.h and docs/autotune.md). For each group
// with a contraction node:
//
//   1. the node alone becomes a small graph with concrete sizes (symbolic dims
//      bound from CompileOptions::example_shapes; without them: not tuned);
//   2. the tuning cache is asked under a key text naming the problem and the
//      machine; a usable record decides without any timing;
//   3. otherwise, on seeded inputs, the reference is made once (the
//      interpreter; on a sample of output elements for a large node,
//      autotune_check.h), then each applicable candidate is compiled with that
//      algorithm forced, run once (warm-up; its output checked against the
//      reference within a tolerance for the dtype and the reduction length)
//      and timed best-of-N while the node's budget lasts;
//   4. the fastest correct candidate wins, and the record is stored.
//
// Order of step 3: the heuristic's choice (always timed, so a tiny budget can
// only confirm or beat it), then the others by falling score. The plain loops
// ("naive") are not run on large nodes: they cannot win there, and one run
// can take many budgets.
//
// Assumes: groups from passes::group_kernels with choose_algorithms run.
// Guarantees: a group's algorithm name stays among its applicable candidates,
// and a candidate whose output differed from the reference is never chosen
// (when every candidate that ran differed, the plain loops are used).
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

#include "api/autotune_check.h"
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
// The plain loop nest every contraction has: the safe choice when every
// timed candidate was rejected.
constexpr const char* kPlainLoops = "naive";
constexpr const char* kTooLarge = "the plain loops are not run on nodes this large";

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
  std::string why_not;               // non-empty: it cannot be tuned
};

Problem make_problem(const ir::Node& n, const Bindings& symbols,
                     const std::vector<std::string>& candidates, const CompileOptions& o,
                     const std::string& backend, const passes::Target& target) {
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
  } catch (const InternalError&) {
    throw;  // a Kiln bug, never a reason to skip tuning
  } catch (const Error& e) {
    p.why_not = std::string("its sizes do not check out: ") + e.what();
    return p;
  }
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

// --- measuring ---------------------------------------------------------------------------

struct Trial {
  std::string name;
  double seconds = -1;  // best time; < 0: not timed
  bool rejected = false;
  std::string note;  // why rejected
};

struct Measurement {
  std::vector<Trial> trials;         // in the order they were run
  std::vector<std::string> untimed;  // left when the budget was spent
  std::vector<std::string> skipped;  // the plain loops on a large node
  std::string reference;             // what outputs were compared with
};

Measurement measure(const Problem& p, const passes::AlgorithmChoice& choice,
                    const CompileOptions& options, const std::string& backend, double budget,
                    AutotuneReport& report) {
  Clock::time_point start = Clock::now();
  Measurement m;
  // The heuristic's pick first (always timed), then the others by falling score.
  std::vector<const passes::AlgorithmCandidate*> order;
  for (const passes::AlgorithmCandidate& c : choice.candidates) {
    if (c.applies) order.push_back(&c);
  }
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) {
    bool a_first = a->name == choice.name, b_first = b->name == choice.name;
    if (a_first != b_first) return a_first;
    return a->score > b->score;
  });
  // The plain loop nest cannot win on a large node and one run of it can take
  // many times the budget: it is timed only on nodes the interpreter checks whole.
  const bool large = multiply_adds(*p.graph->nodes().back()) > kFullReferenceMacs;

  std::vector<Tensor> inputs = tuning_inputs(*p.graph);
  ReferenceCheck reference = make_reference(*p.graph, inputs);
  m.reference = reference.what;
  CompileOptions co = options;
  co.autotune = false;
  co.optimize = false;  // the node alone: nothing to fold, and it must stay as it is
  co.example_shapes.clear();

  for (const passes::AlgorithmCandidate* c : order) {
    bool mandatory = c->name == choice.name;
    if (!mandatory && large && c->name == kPlainLoops) {
      m.skipped.push_back(c->name);
      continue;
    }
    if (!mandatory && since(start) >= budget) {
      m.untimed.push_back(c->name);
      continue;
    }
    Trial t;
    t.name = c->name;
    try {
      CompiledFunction f =
          CompiledFunction::from_impl(build_with_algorithm(*p.graph, co, backend, c->name));
      Clock::time_point t0 = Clock::now();
      std::vector<Tensor> out = f(inputs);
      double warm = since(t0);
      std::string why = reference.check(out);
      if (!why.empty()) {
        t.rejected = true;
        t.note = why + " vs " + reference.what;
      } else {
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
      if (!c.rejected && c.seconds < 0)
        c.tuning_note = "not timed (budget " + budget_text(r.budget_s) + " spent)";
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
  choice.reason = "tuning cache: " + r.choice + " (measured " + format_seconds(r.choice_seconds()) +
                  " on " + when_text(r.measured_at) + (r.note.empty() ? "" : ", at " + r.note) +
                  ")";
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
  if (timed.empty()) s += "nothing correct was timed";
  if (!rejected.empty()) {
    s += "; rejected (output differs from " + m.reference + ", or failed): " + join(rejected);
  }
  if (!m.untimed.empty()) {
    s += "; not timed (budget " + budget_text(budget) + " spent): " + join(m.untimed);
  }
  if (!m.skipped.empty()) s += "; not timed (" + std::string(kTooLarge) + "): " + join(m.skipped);
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
                               const passes::Target& target) {
  Clock::time_point start = Clock::now();
  AutotuneReport report;
  Bindings symbols = bind_symbols(g, options);
  runtime::TuningCache& cache = runtime::TuningCache::global();
  const double budget = options.autotune_budget_s;
  for (passes::KernelGroup& grp : groups) {
    passes::AlgorithmChoice& choice = grp.algorithm;
    const ir::Node* n = contraction_of(grp);
    if (choice.name.empty() || !n || grp.attention) continue;  // a fused attention: one algorithm
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
    // One candidate is measured when that is cheap (explain then shows its
    // time); on a large node its runs would only cost time.
    if (names.size() == 1 && multiply_adds(*p.graph->nodes().back()) > kFullReferenceMacs) {
      not_tuned(choice, names[0] + " is the only candidate", report);
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
      if (std::find(m.skipped.begin(), m.skipped.end(), c.name) != m.skipped.end()) {
        c.tuning_note = std::string("not timed (") + kTooLarge + ")";
      }
    }
    ++report.measured;
    choice.reason = measured_reason(m, budget, p.bound);
    if (r) {
      choice.name = r->choice;
      cache.store(p.key, *r, options.disk_cache);
      continue;
    }
    // Every candidate that ran was wrong: none of them may run. The plain
    // loops (checked against the interpreter by the test suite) are the safe
    // choice; without them the heuristic's pick stays, with a warning. Not
    // stored: the next compile measures again.
    bool plain_ok = std::find(names.begin(), names.end(), kPlainLoops) != names.end();
    for (const Trial& t : m.trials) plain_ok = plain_ok && !(t.name == kPlainLoops && t.rejected);
    if (plain_ok) {
      choice.name = kPlainLoops;
      choice.reason += "; " + std::string(kPlainLoops) + " is used untimed";
    } else {
      std::fprintf(stderr, "kiln: warning: autotune: no %s candidate matched %s; keeping %s\n",
                   n->op().c_str(), m.reference.c_str(), choice.name.c_str());
    }
  }
  report.seconds = since(start);
  if (report.contractions > 0 && env_on("KILN_COMPILE_TIMES")) {
    std::fprintf(stderr,
                 "kiln: autotune: %d contraction(s): %d measured (%d candidates timed), %d from "
                 "the tuning cache, %d kept the heuristic; %.3f ms\n",
                 report.contractions, report.measured, report.candidates_timed, report.from_cache,
                 report.kept_heuristic, report.seconds * 1e3);
  }
  return report;
}

}  // namespace kiln::compile_detail
