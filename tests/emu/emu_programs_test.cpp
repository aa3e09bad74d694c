// Check 6b of issue 12 for whole programs: the examples (with scripts/demo's
// inputs, and again with their declared symbolic types where they declare
// them) and the visible conformance corpus, each compiled for sim:0, its
// kernels' emitted CUDA C run by the CUDA emulator in the plan (emu_check.h),
// compared with ir::interpret. Tolerances: 1e-3 relative and absolute for
// floats (the programs reduce over up to 1024 terms in another order than
// the interpreter), exact otherwise. The corpus gets random inputs of its
// cases' types; it is skipped, with the reason, when absent.
#include <gtest/gtest.h>

#include <map>

#include "tests/emu/emu_check.h"
#include "tests/unit/compiled_programs_util.h"
// The corpus manifest's reader (compiled_programs_util.h); unit tests link only Kiln's libraries.
#include "tests/conformance/json.cpp"

namespace kiln::test {
namespace {

std::pair<double, double> program_tolerance(DType t) {
  if (!is_floating(t)) return {0, 0};
  return {1e-3, 1e-3};
}

// A tensor for a demo input spec ("randn:f32:2x16x64", "ones:f32:64").
Tensor from_spec(const std::string& spec, uint64_t seed) {
  const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
  const std::string kind = spec.substr(0, c1), dt = spec.substr(c1 + 1, c2 - c1 - 1);
  Shape shape;
  std::stringstream ss(spec.substr(c2 + 1));
  for (std::string d; std::getline(ss, d, 'x');) shape.push_back(std::stoll(d));
  const DType dtype = dt == "f64" ? DType::F64 : DType::F32;
  if (kind == "ones") return Tensor::ones(shape, dtype);
  if (kind == "zeros") return Tensor::zeros(shape, dtype);
  return Tensor::randn(shape, seed, dtype);
}

class EmuPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = emutest::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "CUDA emulation harness unavailable: " << why;
  }
};

TEST_F(EmuPrograms, ExamplesMatchTheInterpreter) {
  emutest::EmuCheck check;
  Programs all;
  programs_detail::add_examples(all);
  std::map<std::string, std::vector<Tensor>> feeds;  // example name -> the demo's inputs
  for (const programs_detail::ExampleSpec& e : programs_detail::example_specs()) {
    std::map<std::string, std::string> spec(e.inputs.begin(), e.inputs.end());
    feeds[e.name];
    for (const Program& p : all.programs) {
      if (p.name != std::string("example:") + e.name) continue;
      uint64_t seed = 1;
      for (const auto& v : p.fn.graph().inputs()) {
        feeds[e.name].push_back(from_spec(spec.at(v->name()), seed++));
      }
    }
  }
  for (const Program& p : all.programs) {
    std::string example = p.name.substr(std::string("example:").size());
    example = example.substr(0, example.find(' '));
    check.add(p.name, p.name, p.fn.graph(), {{"demo inputs", feeds.at(example)}},
              program_tolerance);
  }
  check.run_and_report("examples");
}

TEST_F(EmuPrograms, CorpusMatchesTheInterpreter) {
  Programs all;
  programs_detail::add_corpus(all);
  if (!all.corpus_found) {
    GTEST_SKIP() << "no conformance corpus at " << shared_dir()
                 << "/conformance (set KILN_SHARED_DIR)";
  }
  emutest::EmuCheck check;
  int skipped = 0;
  for (const Program& p : all.programs) {
    std::vector<Tensor> feed;
    uint64_t seed = 1;
    bool concrete = true;
    for (const auto& v : p.fn.graph().inputs()) {
      const ir::Type& t = v->type();
      if (!t.is_tensor()) {
        concrete = false;
        break;
      }
      Shape shape;
      for (const ir::Dim& d : t.dims()) {
        if (!d.is_static()) concrete = false;
        if (concrete) shape.push_back(d.value);
      }
      if (!concrete) break;
      feed.push_back(random_tensor(shape, t.dtype(), seed++));
    }
    if (!concrete) {
      ++skipped;
      continue;
    }
    check.add(p.name, p.name, p.fn.graph(), {{"random inputs", feed}}, program_tolerance);
  }
  std::cout << skipped << " corpus functions with non-tensor or symbolic inputs skipped, "
            << all.skipped.size() << " not lowered\n";
  check.run_and_report("corpus");
}

}  // namespace
}  // namespace kiln::test
