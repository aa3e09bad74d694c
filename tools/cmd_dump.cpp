// `kiln dump FILE --stage=STAGE`: prints what one compiler stage produced, so
// users (and the text tests) can see each step. The stages are one table, in
// pipeline order: the frontend's (ast, graph) here, then compile()'s own table
// (loops, loops-scheduled, plan, llvm, llvm-opt, asm), which see the graph
// after the graph pipeline (graph-opt), and the backends' stages (llvm, asm,
// cuda, ptx, sass-resources). Code is generated without loading it, so a
// device's code can be dumped on a machine without the device.
#include <cstdio>
#include <functional>
#include <iostream>

#include "kiln/compile.h"
#include "tools/driver.h"

namespace kiln::cli {

namespace {

struct DumpContext {
  const Program& program;
  const std::string& fn;
  const std::vector<InputArg>& inputs;
  uint64_t seed;
  const OptimizeOptions& opt;     // the graph pipeline's printing and timing
  const CompileOptions& compile;  // --autotune
};

// The bound function after the graph pipeline; what the pipeline prints goes
// to stdout, before the stage's own text.
Function optimized(const DumpContext& c) {
  Bound b = bind_program(c.program, c.fn, c.inputs, c.seed, /*make_tensors=*/false);
  OptimizeOptions o = c.opt;
  o.log = &std::cout;
  std::fflush(stdout);
  return optimize(b.fn, o);
}

struct Stage {
  std::string name;
  std::string what;
  std::function<std::string(const DumpContext&)> dump;
};

std::string dump_ast(const DumpContext& c) {
  KILN_USER_CHECK(c.program.is_script, "dump: stage 'ast' needs a script (.kiln, .py); '"
                                           << c.program.path << "' is graph IR");
  return c.program.script->dump_ast();
}

std::string dump_graph(const DumpContext& c) {
  Bound b = bind_program(c.program, c.fn, c.inputs, c.seed, /*make_tensors=*/false);
  return b.fn.str();
}

std::string dump_graph_opt(const DumpContext& c) {
  return optimized(c).str();
}

// A compile() stage: runs the graph pipeline, lowers and compiles for the CPU,
// then prints the stage.
std::function<std::string(const DumpContext&)> compiled_stage(std::string name) {
  return [name](const DumpContext& c) {
    CompileOptions o = c.compile;
    o.load = false;      // code only: the device need not exist (cuda without a GPU)
    o.optimize = false;  // optimized() ran the graph pipeline (and its printing flags)
    o.passes = c.opt;    // the loop pipeline prints after it, before the stage
    o.passes.log = &std::cout;
    if (o.autotune) {
      // Tuning needs sizes: those of the --input tensors, when every input is given.
      try {
        o.example_shapes = shapes_of(
            bind_program(c.program, c.fn, c.inputs, c.seed, /*make_tensors=*/true).tensors);
      } catch (const Error&) {
        o.example_shapes.clear();  // symbolic dims stay untuned; explain says so
      }
    }
    return compile(optimized(c), o).dump(name);
  };
}

const std::vector<Stage>& stages() {
  static const std::vector<Stage> kStages = [] {
    std::vector<Stage> s = {
        {"ast", "the script's syntax tree (scripts only)", dump_ast},
        {"graph", "graph IR after lowering or parsing, verified", dump_graph},
        {"graph-opt", "graph IR after the graph pipeline (fold, simplify, CSE, DCE)",
         dump_graph_opt},
    };
    for (const DumpStageInfo& info : dump_stages()) {
      s.push_back({info.name, info.description, compiled_stage(info.name)});
    }
    return s;
  }();
  return kStages;
}

std::string stage_names() {
  std::string s;
  for (const Stage& st : stages()) s += (s.empty() ? "" : ", ") + std::string(st.name);
  return s;
}

std::string help_text() {
  std::string s =
      "usage: kiln dump FILE --stage=STAGE [--fn NAME] [--input NAME=SPEC ...] [--device DEV]\n"
      "                 [--cuda-arch SM] [--print-after-all] [--print-after PASS] [--time-passes]\n"
      "\n"
      "Prints the output of one compilation stage. Stages:\n";
  for (const Stage& st : stages()) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-16s %s\n", st.name.c_str(), st.what.c_str());
    s += line;
  }
  s += "\n"
       "A script def is specialized before it is lowered: tensor parameters take\n"
       "their types from --input specs (as for 'kiln run'; only the type is used) or\n"
       "from their Kiln annotations; non-tensor parameters from --input NAME=VALUE or\n"
       "their defaults.\n"
       "\n"
       "options:\n"
       "  --stage STAGE        the stage to print (required)\n"
       "  --fn NAME            the script def (default: the last); --entry is an alias\n"
       "  --input NAME=SPEC    as for 'kiln run'\n";
  s += device_flags_help();
  s += "  --cuda-arch SM       the GPU a cuda device's code is generated for (default\n"
       "                       sm_90; the device itself need not exist)\n";
  s += autotune_flags_help();
  s += pipeline_flags_help("(on stdout, before the stage; stages graph-opt and later)");
  s += "  -h, --help           show this help\n";
  return s;
}

}  // namespace

int cmd_dump(const Args& args) {
  ArgReader r("dump", args);
  std::optional<std::string> file, stage;
  std::string fn;
  std::vector<InputArg> inputs;
  OptimizeOptions opt;
  CompileOptions compile_options;
  while (!r.done()) {
    if (r.help()) {
      std::fputs(help_text().c_str(), stdout);
      return 0;
    }
    if (auto v = r.value({"stage"})) {
      stage = v;
    } else if (auto v = r.value({"fn", "entry"})) {
      fn = *v;
    } else if (auto v = r.value({"input"})) {
      inputs.push_back(split_input(*v));
    } else if (read_pipeline_flag(r, &opt)) {
    } else if (read_autotune_flag(r, &compile_options)) {
    } else if (read_device_flag(r, &compile_options)) {
    } else if (auto v = r.value({"cuda-arch"})) {
      compile_options.cuda_arch = *v;
    } else if (auto p = r.positional(); p && !file) {
      file = p;
    } else {
      r.unknown();
    }
  }
  KILN_USER_CHECK(stage, "dump: --stage is required; known stages: " << stage_names());
  const Stage* chosen = nullptr;
  for (const Stage& st : stages()) {
    if (*stage == st.name) chosen = &st;
  }
  KILN_USER_CHECK(chosen, "unknown stage '" << *stage << "'; known stages: " << stage_names());
  KILN_USER_CHECK(file, "dump: missing FILE (see 'kiln dump --help')");
  Program program = load_program(*file);
  KILN_USER_CHECK(!any_pipeline_flag(opt) || (chosen->name != "ast" && chosen->name != "graph"),
                  "dump: --print-after-all, --print-after and --time-passes need a stage the "
                  "graph pipeline runs for (graph-opt or later), not '"
                      << chosen->name << "'");
  std::string text = chosen->dump(DumpContext{program, fn, inputs, 0, opt, compile_options});
  std::fputs(text.c_str(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

}  // namespace kiln::cli
