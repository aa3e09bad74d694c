// CompiledFunction::profile: one call run with the executable's timing hooks
// (runtime/profile.h), each kernel joined with what the compiler knows of it
// (name, category, algorithm, flops from its graph nodes) and with the
// machine's measured peaks (runtime/machine_peaks.h); and the two renderings,
// the `kiln run --profile` table and the trace-event JSON of `--trace`.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "api/compile_internal.h"
#include "ir/op_registry.h"
#include "kiln/compile.h"
#include "runtime/machine_peaks.h"
#include "runtime/profile.h"
#include "runtime/thread_pool.h"

namespace kiln {

namespace {

// ------------------------------------------------------------------------------- flops

using Symbols = std::map<std::string, int64_t, std::less<>>;

// Symbolic dims bound by the call's inputs, as Executable binds them.
Symbols bind_symbols(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  Symbols sym;
  for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i) {
    const ir::Type& t = g.inputs()[i]->type();
    if (!t.is_tensor() || !inputs[i].defined()) continue;
    const ir::Dims& dims = t.dims();
    for (size_t d = 0; d < dims.size() && int64_t(d) < inputs[i].dim(); ++d) {
      if (!dims[d].is_static()) sym.emplace(dims[d].symbol, inputs[i].sizes()[d]);
    }
  }
  return sym;
}

// Elements of a tensor value (1 for a scalar); an unbound symbol counts 0.
double elements(const ir::Value* v, const Symbols& sym) {
  if (!v || !v->type().is_tensor()) return 1;
  double n = 1;
  for (const ir::Dim& d : v->type().dims()) {
    if (d.is_static()) {
      n *= double(d.value);
    } else {
      auto it = sym.find(d.symbol);
      n *= it == sym.end() ? 0.0 : double(it->second);
    }
  }
  return n;
}

double dim_value(const ir::Dim& d, const Symbols& sym) {
  if (d.is_static()) return double(d.value);
  auto it = sym.find(d.symbol);
  return it == sym.end() ? 0.0 : double(it->second);
}

// A dim of a tensor value (`back`: the last, else the first); 1 for a scalar.
double edge_dim(const ir::Value* v, const Symbols& sym, bool back) {
  if (!v || !v->type().is_tensor() || v->type().dims().empty()) return 1;
  const ir::Dims& dims = v->type().dims();
  return dim_value(back ? dims.back() : dims.front(), sym);
}

struct Flops {
  double count = 0;
  bool estimated = false;
};

// One node's operations: exact for the matrix contractions, else an estimate.
void add_node_flops(const ir::Node& n, const Symbols& sym, Flops* f) {
  const ir::OpCategory category =
      n.def() ? n.def()->category : ir::OpCategory::Other;
  const double out = n.num_outputs() ? elements(n.output(0), sym) : 0;
  const ir::Value* in0 = n.inputs().empty() ? nullptr : n.input(0);
  if (n.op() == "matmul" || n.op() == "bmm" || n.op() == "linear") {
    f->count += 2 * out * edge_dim(in0, sym, true);  // K is the first operand's last dim
    return;
  }
  if (n.op() == "conv2d" && n.inputs().size() >= 2) {
    // K: in/groups * kH * kW, the weight's elements per output channel.
    const ir::Value* w = n.input(1);
    const double out_channels = edge_dim(w, sym, false);
    if (out_channels > 0) f->count += 2 * out * elements(w, sym) / out_channels;
    return;
  }
  if (category == ir::OpCategory::Layout) return;  // indexing only: none, exactly
  f->estimated = true;
  switch (category) {
    case ir::OpCategory::Reduction:
    case ir::OpCategory::Contraction:  // pooling: one per input element, about
      f->count += elements(in0, sym);
      return;
    default:
      f->count += out;  // one per element per op (a transcendental counts 1)
      return;
  }
}

Flops group_flops(const passes::KernelGroup& g, const Symbols& sym) {
  Flops f;
  for (const ir::Node* n : g.nodes) add_node_flops(*n, sym, &f);
  for (const ir::Node* n : g.recomputed) add_node_flops(*n, sym, &f);
  return f;
}

// ------------------------------------------------------------------------------- text

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// Seconds as trace microseconds, exact to the nanosecond: "12.345".
int64_t to_ns(double seconds) {
  return std::llround(seconds * 1e9);
}
std::string micros(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}

const CompiledFunction::Impl& checked_impl(const std::shared_ptr<const CompiledFunction::Impl>& p) {
  KILN_USER_CHECK(p != nullptr,
                  "CompiledFunction is empty (default-constructed); call "
                  "kiln::compile() to make one");
  return *p;
}

}  // namespace

const MachinePeaks& machine_peaks() {
  static const MachinePeaks* peaks = [] {
    const runtime::MachinePeaks& r = runtime::machine_peaks();
    return new MachinePeaks{r.bandwidth_gbs, r.fma_gflops, r.threads, r.isa, r.source};
  }();
  return *peaks;
}

std::vector<Tensor> CompiledFunction::profile(const std::vector<Tensor>& inputs,
                                              CallProfile* out) const {
  const Impl& impl = checked_impl(impl_);
  KILN_USER_CHECK(out != nullptr, "CompiledFunction::profile: no CallProfile to fill");
  KILN_USER_CHECK(impl.options.load, "CompiledFunction '"
                                         << impl.name
                                         << "' was compiled with CompileOptions::load = false "
                                            "(code generation only); it cannot be profiled");
  CallProfile p;
  p.function = "@" + impl.name;
  p.backend = impl.backend;
  p.threads = num_threads();
  p.peaks = machine_peaks();  // before the call: measuring is not part of it
  std::vector<Tensor> result;
  if (!impl.exec) {
    // The interpreter: no kernels, only the call.
    int64_t t0 = runtime::now_ns();
    result = run(inputs);
    p.seconds = double(runtime::now_ns() - t0) * 1e-9;
    *out = std::move(p);
    return result;
  }
  runtime::RunProfile rp;
  result = impl.exec->run(inputs, nullptr, &rp);
  p.seconds = double(rp.end_ns - rp.begin_ns) * 1e-9;
  const Symbols sym = bind_symbols(*impl.graph, inputs);
  const std::vector<runtime::Launch>& launches = impl.exec->launches();
  std::vector<int> kernel_of_launch(launches.size(), -1);
  for (const runtime::LaunchTiming& t : rp.launches) {
    const runtime::Launch& l = launches[size_t(t.launch)];
    KernelProfile k;
    k.name = l.name;
    k.device = l.device.str();
    k.skipped = t.skipped;
    if (size_t(t.launch) < impl.categories.size()) {
      k.category = ir::category_name(impl.categories[size_t(t.launch)]);
    }
    if (size_t(t.launch) < impl.groups.size()) {
      const passes::KernelGroup& g = impl.groups[size_t(t.launch)];
      k.algorithm = g.algorithm.name;
      Flops f = group_flops(g, sym);
      k.flops = f.count;
      k.flops_estimated = f.estimated;
    }
    k.bytes_read = t.bytes_read;
    k.bytes_written = t.bytes_written;
    if (!t.skipped) {
      k.seconds = double(t.end_ns - t.begin_ns) * 1e-9;
      k.begin_s = double(t.begin_ns - rp.begin_ns) * 1e-9;
    }
    k.share = p.seconds > 0 ? k.seconds / p.seconds : 0;
    if (k.seconds > 0) {
      k.gb_per_s = double(k.bytes_read + k.bytes_written) / k.seconds * 1e-9;
      k.gflop_per_s = k.flops / k.seconds * 1e-9;
      if (l.device.is_cpu()) {
        if (p.peaks.bandwidth_gbs > 0) k.bandwidth_fraction = k.gb_per_s / p.peaks.bandwidth_gbs;
        if (p.peaks.fma_gflops > 0) k.fma_fraction = k.gflop_per_s / p.peaks.fma_gflops;
      }
    }
    kernel_of_launch[size_t(t.launch)] = int(p.kernels.size());
    p.kernels.push_back(std::move(k));
  }
  for (const runtime::ChunkTiming& c : rp.chunks) {
    if (c.launch < 0 || size_t(c.launch) >= launches.size()) continue;
    ThreadSpan s;
    s.thread = c.thread;
    s.kernel = kernel_of_launch[size_t(c.launch)];
    s.begin_s = double(c.begin_ns - rp.begin_ns) * 1e-9;
    s.seconds = double(c.end_ns - c.begin_ns) * 1e-9;
    s.begin = c.begin;
    s.end = c.end;
    if (s.kernel >= 0) p.spans.push_back(s);
  }
  std::stable_sort(p.spans.begin(), p.spans.end(),
                   [](const ThreadSpan& a, const ThreadSpan& b) { return a.begin_s < b.begin_s; });
  *out = std::move(p);
  return result;
}

std::string CallProfile::table() const {
  std::string s = "profile " + function + " (" + backend + ", " + std::to_string(threads) +
                  (threads == 1 ? " thread" : " threads") + "): " + fmt("%.3f", seconds * 1e3) +
                  " ms, " + std::to_string(kernels.size()) +
                  (kernels.size() == 1 ? " kernel\n" : " kernels\n");
  s += "machine: " + fmt("%.1f", peaks.bandwidth_gbs) + " GB/s memory (triad), " +
       fmt("%.1f", peaks.fma_gflops) + " GFLOP/s f32 FMA (" + peaks.isa + "), " +
       std::to_string(peaks.threads) + " threads, " + peaks.source + "\n";
  if (kernels.empty()) {
    s += "no kernels: the " + backend + " backend runs the graph as a whole\n";
    return s;
  }
  size_t name_w = 6, algo_w = 9;
  for (const KernelProfile& k : kernels) {
    name_w = std::max(name_w, k.name.size());
    algo_w = std::max(algo_w, k.algorithm.size());
  }
  auto pad = [](std::string t, size_t w) {
    if (t.size() < w) t.append(w - t.size(), ' ');
    return t;
  };
  auto rpad = [](std::string t, size_t w) {
    if (t.size() < w) t.insert(0, w - t.size(), ' ');
    return t;
  };
  s += rpad("#", 3) + "  " + pad("kernel", name_w) + "  " + pad("category", 11) + "  " +
       pad("algorithm", algo_w) + "  " + rpad("ms", 9) + "  " + rpad("share", 6) + "  " +
       rpad("MB", 9) + "  " + rpad("GB/s", 8) + "  " + rpad("%bw", 6) + "  " + rpad("MFLOP", 11) +
       "  " + rpad("GFLOP/s", 8) + "  " + rpad("%fma", 6) + "\n";
  double kernel_seconds = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelProfile& k = kernels[i];
    kernel_seconds += k.seconds;
    std::string line = rpad(std::to_string(i), 3) + "  " + pad(k.name, name_w) + "  " +
                       pad(k.category, 11) + "  " + pad(k.algorithm.empty() ? "-" : k.algorithm, algo_w) + "  ";
    if (k.skipped) {
      s += line + "skipped (writes nothing: empty outputs)\n";
      continue;
    }
    auto percent = [&](double f) { return f < 0 ? std::string("-") : fmt("%.1f%%", f * 100); };
    line += rpad(fmt("%.3f", k.seconds * 1e3), 9) + "  " + rpad(fmt("%.1f%%", k.share * 100), 6) +
            "  " + rpad(fmt("%.3f", double(k.bytes_read + k.bytes_written) * 1e-6), 9) + "  " +
            rpad(fmt("%.2f", k.gb_per_s), 8) + "  " + rpad(percent(k.bandwidth_fraction), 6) + "  " +
            rpad((k.flops_estimated ? "~" : "") + fmt("%.3f", k.flops * 1e-6), 11) + "  " +
            rpad(fmt("%.2f", k.gflop_per_s), 8) + "  " + rpad(percent(k.fma_fraction), 6);
    s += line + "\n";
  }
  const double other = std::max(0.0, seconds - kernel_seconds);
  s += "outside kernels: " + fmt("%.3f", other * 1e3) + " ms (" +
       fmt("%.1f%%", seconds > 0 ? other / seconds * 100 : 0.0) +
       "; input checks, buffers, copies)\n";
  s += "MB: each buffer a kernel reads or writes, once; ~: estimated flops (one per element per "
       "op; exact 2*M*N*K for matmul, bmm, linear, conv2d)\n";
  return s;
}

std::string CallProfile::trace_json() const {
  struct Event {
    int tid;
    int64_t ts, dur;
    std::string text;  // the whole object
  };
  std::vector<Event> events;
  auto complete = [&](int tid, double begin_s, double s, const std::string& name,
                      const std::string& cat, const std::string& args) {
    const int64_t ts = to_ns(begin_s), end = to_ns(begin_s + s);
    const int64_t dur = std::max<int64_t>(0, end - ts);
    std::string e = "{\"name\":" + json_string(name) + ",\"cat\":" + json_string(cat) +
                    ",\"ph\":\"X\",\"ts\":" + micros(ts) + ",\"dur\":" + micros(dur) +
                    ",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"args\":{" + args + "}}";
    events.push_back({tid, ts, dur, std::move(e)});
  };
  complete(0, 0, seconds, "call " + function, "call",
           "\"backend\":" + json_string(backend) + ",\"kernels\":" + std::to_string(kernels.size()));
  for (const KernelProfile& k : kernels) {
    if (k.skipped) continue;
    std::string args = "\"category\":" + json_string(k.category) +
                       ",\"algorithm\":" + json_string(k.algorithm) +
                       ",\"device\":" + json_string(k.device) +
                       ",\"bytes_read\":" + std::to_string(k.bytes_read) +
                       ",\"bytes_written\":" + std::to_string(k.bytes_written) +
                       ",\"bytes\":" + std::to_string(k.bytes_read + k.bytes_written) +
                       ",\"flops\":" + fmt("%.0f", k.flops) +
                       ",\"flops_estimated\":" + (k.flops_estimated ? "true" : "false") +
                       ",\"gb_per_s\":" + fmt("%.3f", k.gb_per_s) +
                       ",\"gflop_per_s\":" + fmt("%.3f", k.gflop_per_s);
    complete(0, k.begin_s, k.seconds, k.name, "kernel", args);
  }
  std::set<int> threads_seen = {0};
  for (const ThreadSpan& sp : spans) {
    threads_seen.insert(sp.thread);
    const std::string& kernel = kernels[size_t(sp.kernel)].name;
    complete(sp.thread, sp.begin_s, sp.seconds, kernel, "chunk",
             "\"begin\":" + std::to_string(sp.begin) + ",\"end\":" + std::to_string(sp.end));
  }
  // Per thread by start; an enclosing event before the events inside it.
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;
  });
  std::string s = "{\"traceEvents\":[\n";
  s += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":" +
       json_string("kiln " + function + " (" + backend + ")") + "}}";
  for (int t : threads_seen) {
    s += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(t) +
         ",\"args\":{\"name\":" +
         json_string(t == 0 ? "caller" : "kiln-worker-" + std::to_string(t)) + "}}";
  }
  for (const Event& e : events) s += ",\n" + e.text;
  s += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"function\":" + json_string(function) +
       ",\"backend\":" + json_string(backend) + ",\"threads\":" + std::to_string(threads) +
       ",\"peak_bandwidth_gbs\":" + fmt("%.3f", peaks.bandwidth_gbs) +
       ",\"peak_fma_gflops\":" + fmt("%.3f", peaks.fma_gflops) + "}}\n";
  return s;
}

}  // namespace kiln
