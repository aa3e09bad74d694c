// Kiln's public C++ API — the one header users include.
//
//   #include "kiln/kiln.h"
//
//   kiln::Builder b("mlp");
//   kiln::Var x = b.input("x", kiln::DType::F32, {kiln::sym("N"), 784});
//   kiln::Var w = b.input("w", kiln::DType::F32, {784, 256});
//   kiln::Var bias = b.input("b", kiln::DType::F32, {256});
//   kiln::Var y = kiln::relu(kiln::matmul(x, w) + bias);
//   kiln::Function f = b.build({y});          // verified graph
//   std::cout << f.str();                      // text IR
//   std::vector<kiln::Tensor> out = f.run_interpreter({xt, wt, bt});
//
// What is here (docs/cpp-api.md walks through it):
//   kiln/tensor.h    Tensor, Storage, .npy read/write
//   kiln/dtype.h     DType, Device, promotion
//   kiln/error.h     kiln::Error (user mistakes), kiln::InternalError (Kiln bugs)
//   kiln/function.h  Function (a verified graph), parse_ir, load_ir, op listing
//   kiln/builder.h   Builder, Var, operators and named op functions, kiln::op
//   kiln/script.h    Script, load_script (the script frontend)
//
// None of these include Kiln's internal headers; the graph IR is only
// forward-declared (Function::graph() is the escape hatch for Kiln's tools).
#pragma once

#include "kiln/builder.h"
#include "kiln/compile.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/function.h"
#include "kiln/script.h"
#include "kiln/tensor.h"
