// kiln::optimize: the public face of the graph pipeline (passes/pipeline.h).
// Works on a private copy, so the caller's Function (shared, immutable) is
// never changed.
#include "kiln/optimize.h"

#include "api/convert.h"

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "passes/schedule/loop_pipeline.h"

namespace kiln {

std::vector<std::string> graph_pass_names() {
  return passes::pipeline_pass_names();
}

std::vector<std::string> loop_pass_names() {
  return passes::loop_pass_names();
}

namespace api {

passes::PipelineOptions pipeline_options(const OptimizeOptions& options) {
  passes::PipelineOptions po;
  po.print_after_all = options.print_after_all;
  po.print_after = options.print_after;
  po.time_passes = options.time_passes;
  po.out = options.log;
  if (options.verify_each) po.verify_each = true;
  return po;
}

}  // namespace api

Function optimize(const Function& f, const OptimizeOptions& options) {
  std::shared_ptr<ir::Graph> g = f.graph().clone();
  passes::run_pipeline(*g, api::pipeline_options(options));
  return Function::from_graph(std::move(g));
}

}  // namespace kiln
