// `kiln explain FILE`: why the compiled function has the kernels it has. Prints
// `kernels: N`, then each kernel with its source ops (file:line:col for
// scripts) and the reason for its boundary, then the memory the buffer plan
// needs for the given inputs (one call is run to measure it).
#include <cstdio>

#include "kiln/compile.h"

#include "tools/driver.h"

namespace kiln::cli {

namespace {
constexpr const char* kHelp =
    "usage: kiln explain FILE [--fn NAME] [--input NAME=SPEC ...] [--no-fuse] [--device DEV]\n"
    "                    [--autotune]\n"
    "\n"
    "Compiles a .kir graph or a script def (specialized for the inputs, like\n"
    "'kiln run') and explains its kernels: the first line is 'kernels: N', then\n"
    "for each kernel its name and category, the ops in it with their source\n"
    "location, and why the kernel boundary exists (what fused, or why not).\n"
    "A kernel with a contraction (matmul, conv2d, ...) also lists its algorithm\n"
    "and why, and every candidate: whether it applies, the heuristic's score and,\n"
    "with --autotune, its measured time or why it was rejected.\n"
    "The last line gives the memory of outputs and intermediates after buffer\n"
    "reuse, measured by one call on the given inputs.\n"
    "\n"
    "options:\n"
    "  --fn NAME            the script def (default: the last one)\n"
    "  --input NAME=SPEC    an argument, as for 'kiln run'\n"
    "  --no-fuse            one kernel per op (the unfused baseline)\n"
    "  --seed S             seed for generated inputs (default 0)\n";
constexpr const char* kHelpTail = "  -h, --help           show this help\n";
}  // namespace

int cmd_explain(const Args& args) {
  ArgReader r("explain", args);
  std::optional<std::string> file;
  std::string fn;
  std::vector<InputArg> inputs;
  uint64_t seed = 0;
  CompileOptions options;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(kHelp, stdout);
      std::fputs(device_flags_help().c_str(), stdout);
      std::fputs(autotune_flags_help().c_str(), stdout);
      std::fputs(kHelpTail, stdout);
      return 0;
    }
    if (auto v = r.value({"fn", "entry"})) {
      fn = *v;
    } else if (auto v = r.value({"input"})) {
      inputs.push_back(split_input(*v));
    } else if (r.flag("no-fuse")) {
      options.fuse = false;
    } else if (read_autotune_flag(r, &options)) {
    } else if (read_device_flag(r, &options)) {
    } else if (auto v = r.value({"seed"})) {
      int64_t s = std::get<int64_t>(parse_value("--seed", *v, ParamKind::Int).storage());
      KILN_USER_CHECK(s >= 0, "explain: --seed must be >= 0, got " << s);
      seed = static_cast<uint64_t>(s);
    } else if (auto p = r.positional(); p && !file) {
      file = p;
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(file, "explain: missing FILE (see 'kiln explain --help')");
  Program program = load_program(*file);
  Bound bound = bind_program(program, fn, inputs, seed, /*make_tensors=*/true);
  options.example_shapes = shapes_of(bound.tensors);
  CompiledFunction compiled = compile(bound.fn, options);
  std::fputs(compiled.explain().c_str(), stdout);
  CallStats stats;
  compiled.run(bound.tensors, &stats);
  std::printf(
      "memory: peak intermediates %lld bytes; %lld bytes in %lld buffers (outputs and "
      "intermediates after reuse; %lld buffers reused)",
      static_cast<long long>(stats.peak_intermediate_bytes),
      static_cast<long long>(stats.allocated_bytes),
      static_cast<long long>(stats.allocated_buffers),
      static_cast<long long>(stats.reused_buffers));
  if (stats.copies > 0) {
    std::printf("; %lld copies between devices (%lld bytes)", static_cast<long long>(stats.copies),
                static_cast<long long>(stats.copied_bytes));
  }
  std::printf("\n");
  return 0;
}

}  // namespace kiln::cli
