// Helpers for op tests: run one registry op on concrete tensors (type inference
// plus reference implementation), without building a graph.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::test {

// One operand: a tensor, a scalar (wrapped number) or none.
struct Arg {
  Tensor value;
  ir::Type type;

  Arg(const Tensor& t)  // NOLINT: implicit so {x, y} works
      : value(t), type(ir::Type::tensor(t.dtype(), ir::dims_from_shape(t.sizes()))) {}
  static Arg f(double v) { return {Tensor::scalar(v, DType::F64), ir::Type::float_()}; }
  static Arg i(int64_t v) { return {Tensor::scalar(double(v), DType::I64), ir::Type::int_()}; }
  static Arg b(bool v) { return {Tensor::scalar(v ? 1 : 0, DType::Bool), ir::Type::bool_()}; }
  static Arg none() { return {Tensor(), ir::Type::none()}; }

 private:
  Arg(Tensor t, ir::Type ty) : value(std::move(t)), type(std::move(ty)) {}
};

inline const ir::OpDef& op_def(const std::string& name) {
  const ir::OpDef* d = ir::OpRegistry::global().find(name);
  if (!d) throw Error("test: no op named " + name);
  return *d;
}

// Output types the op infers for these operands (throws kiln::Error on misuse).
inline std::vector<ir::Type> infer_op(const std::string& name, const std::vector<Arg>& args,
                                      const ir::Attrs& attrs = {}) {
  const ir::OpDef& d = op_def(name);
  std::vector<ir::Type> types;
  for (const Arg& a : args) types.push_back(a.type);
  return ir::infer_types(d, types, ir::complete_attrs(d, attrs));
}

// Runs the reference implementation; checks outputs have the inferred types.
inline std::vector<Tensor> run_op(const std::string& name, const std::vector<Arg>& args,
                                  const ir::Attrs& attrs = {}) {
  const ir::OpDef& d = op_def(name);
  ir::Attrs full = ir::complete_attrs(d, attrs);
  std::vector<ir::Type> types;
  std::vector<Tensor> values;
  for (const Arg& a : args) {
    types.push_back(a.type);
    values.push_back(a.value);
  }
  std::vector<ir::Type> out_types = ir::infer_types(d, types, full);
  std::vector<Tensor> outs = d.reference(ir::RefContext{d, types, values, full, out_types});
  EXPECT_EQ(outs.size(), out_types.size()) << name;
  for (size_t i = 0; i < outs.size() && i < out_types.size(); ++i) {
    EXPECT_EQ(outs[i].dtype(), out_types[i].dtype()) << name << " output " << i;
    EXPECT_EQ(outs[i].sizes(), ir::static_shape(out_types[i].dims())) << name << " output " << i;
  }
  return outs;
}

inline Tensor run_op1(const std::string& name, const std::vector<Arg>& args,
                      const ir::Attrs& attrs = {}) {
  return run_op(name, args, attrs).at(0);
}

// A tensor of `dtype` with the given row-major values.
inline Tensor make_tensor(const Shape& sizes, const std::vector<double>& values,
                          DType dtype = DType::F32) {
  Tensor t = Tensor::empty(sizes, dtype);
  EXPECT_EQ(int64_t(values.size()), t.numel());
  Tensor flat = t.view_as_strided({t.numel()}, {1}, 0);
  for (int64_t i = 0; i < t.numel(); ++i) flat.set(std::vector<int64_t>{i}, values[size_t(i)]);
  return t;
}

// All elements as doubles, row-major.
inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(flat.get(std::vector<int64_t>{i}));
  return out;
}

}  // namespace kiln::test
