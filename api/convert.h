// Conversions between the public API's value types (kiln/function.h) and the
// graph IR's (ir/type.h, ir/attributes.h), shared by the api/ sources.
#pragma once

#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/graph.h"
#include "ir/type.h"
#include "kiln/function.h"
#include "kiln/optimize.h"
#include "passes/pass_runner.h"

namespace kiln::api {

ir::Dims to_ir_dims(const std::vector<Dim>& dims);
std::vector<Dim> from_ir_dims(const ir::Dims& dims);
ir::TensorType to_ir_tensor_type(const TensorSpec& spec);
TensorSpec from_ir_tensor_type(const ir::TensorType& t);

ir::AttrValue to_ir_attr(const Attr& a);
Attr from_ir_attr(const ir::AttrValue& v);

ValueKind value_kind(const ir::Type& t);
ValueInfo value_info(const ir::Value& v);

// The pass runner's options for public OptimizeOptions (api/optimize.cpp).
passes::PipelineOptions pipeline_options(const OptimizeOptions& options);

// Whole file as a string; kiln::Error "cannot read 'PATH': REASON" on failure.
std::string read_text_file(const std::string& path);

}  // namespace kiln::api
