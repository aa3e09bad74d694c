// Kiln's model rows (see model_rows.h).
//
// Each input is ModelInput {name, shape, seed, scale, offset}: the tensor
// hashed(shape, seed, scale, offset), except conv_block's `bn`, whose four
// rows (weight, bias, running mean, running var) are four such vectors, the
// var row 1 + 0.5 u so it stays in [0.5, 1.5). Weight scales are powers of two
// near 1/sqrt(fan-in), so activations stay O(1) through GELU and softmax.
#include "bench/model_rows.h"

#include <cmath>
#include <memory>

#include "bench/bench_data.h"
#include "kiln/kiln.h"

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree (bench/CMakeLists.txt sets it)"
#endif

namespace kiln::bench {

namespace {

struct ModelInput {
  std::string name;
  kiln::Shape shape;
  uint64_t seed;
  double scale = 1.0, offset = 0.0;
};

struct Model {
  std::string file, fn;
  std::vector<ModelInput> inputs;
  std::vector<kiln::Binding> values;  // non-tensor parameters
  int64_t batch = 0;                  // dim 0 of inputs[0], sliced for the reference
  int64_t slice = 1;                  // rows per reference slice
};

double since(int64_t t0) {
  return static_cast<double>(monotonic_ns() - t0) * 1e-9;
}

std::string dims(const kiln::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

kiln::Tensor make_input(const ModelInput& in) {
  if (in.name != "bn") return hashed(in.shape, in.seed, in.scale, in.offset);
  // weight, bias, running mean, running var: rows of [4, C].
  const int64_t c = in.shape[1];
  const double scale[4] = {0.25, 0.25, 0.25, 0.5}, offset[4] = {1.0, 0.0, 0.0, 1.0};
  kiln::Tensor t = kiln::Tensor::empty(in.shape, kiln::DType::F32);
  for (int64_t r = 0; r < 4; ++r) {
    kiln::Tensor row = hashed({c}, in.seed + uint64_t(r), scale[r], offset[r]);
    std::copy(row.data<float>(), row.data<float>() + c, t.data<float>() + r * c);
  }
  return t;
}

Model model(const std::string& name, bool smoke) {
  Model m;
  if (name == "mlp_issue6" || name == "mlp") {
    const bool big = name == "mlp_issue6";
    // issue 6: 256x1024 -> 4096 -> 1024; the example's comment: 32x256 -> 1024 -> 256.
    const int64_t n = smoke ? 16
                      : big ? 256
                            : 32,
                  d = smoke ? 64
                      : big ? 1024
                            : 256,
                  h = smoke ? 256
                      : big ? 4096
                            : 1024;
    const uint64_t s = big ? 41 : 51;
    m.file = "examples/mlp.kiln";
    m.fn = "mlp";
    m.inputs = {{"x", {n, d}, s},
                {"w1", {d, h}, s + 1, d >= 1024 ? 1.0 / 32 : 1.0 / 16},
                {"b1", {h}, s + 2, 0.5},
                {"w2", {h, d}, s + 3, h >= 4096 ? 1.0 / 64 : 1.0 / 32},
                {"b2", {d}, s + 4, 0.5}};
    m.batch = n;
    m.slice = 4;
  } else if (name == "transformer") {
    // 8 sequences of 128 tokens, width 256, 4 heads of 64 (smoke: the
    // example comment's 2x16x64).
    const int64_t b = smoke ? 2 : 8, t = smoke ? 16 : 128, c = smoke ? 64 : 256;
    m.file = "examples/transformer.kiln";
    m.fn = "transformer_layer";
    m.inputs = {{"x", {b, t, c}, 61},         {"ln1_w", {c}, 62, 0.25, 1.0},
                {"ln1_b", {c}, 63, 0.25},     {"w_qkv", {3 * c, c}, 64, 1.0 / 16},
                {"b_qkv", {3 * c}, 65, 0.25}, {"w_o", {c, c}, 66, 1.0 / 16},
                {"b_o", {c}, 67, 0.25},       {"ln2_w", {c}, 68, 0.25, 1.0},
                {"ln2_b", {c}, 69, 0.25},     {"w_up", {4 * c, c}, 70, 1.0 / 16},
                {"b_up", {4 * c}, 71, 0.25},  {"w_down", {c, 4 * c}, 72, 1.0 / 32},
                {"b_down", {c}, 73, 0.25}};
    m.values = {kiln::bind_value("heads", int64_t{4})};
    m.batch = b;
  } else if (name == "conv_block") {
    // A ResNet stage-1 sized block, batch 8 (smoke: the comment's 2x3x32x32).
    const int64_t b = smoke ? 2 : 8, cin = smoke ? 3 : 64, cout = smoke ? 16 : 64,
                  hw = smoke ? 32 : 56;
    m.file = "examples/conv_block.kiln";
    m.fn = "conv_bn_relu_pool";
    m.inputs = {
        {"x", {b, cin, hw, hw}, 81}, {"w", {cout, cin, 3, 3}, 82, 1.0 / 16}, {"bn", {4, cout}, 83}};
    m.batch = b;
  } else if (name == "gpt2_attention") {
    // nanoGPT's CausalSelfAttention as tests/models/gpt2_block.py writes it
    // (the .py file as is): 4 sequences of 128 tokens, width 768, 12 heads of
    // 64 (smoke: 2x16x64, 4 heads). Weight scales 1/32 ~ 1/sqrt(768).
    const int64_t b = smoke ? 2 : 4, t = smoke ? 16 : 128, c = smoke ? 64 : 768;
    const double ws = smoke ? 1.0 / 8 : 1.0 / 32;
    m.file = "tests/models/gpt2_block.py";
    m.fn = "causal_self_attention";
    m.inputs = {{"x", {b, t, c}, 91},
                {"c_attn_w", {3 * c, c}, 92, ws},
                {"c_attn_b", {3 * c}, 93, 0.125},
                {"c_proj_w", {c, c}, 94, ws},
                {"c_proj_b", {c}, 95, 0.125}};
    m.values = {kiln::bind_value("n_head", int64_t{smoke ? 4 : 12})};
    m.batch = b;
  } else {
    throw kiln::Error("model_rows: unknown model '" + name + "'");
  }
  return m;
}

kiln::Function lower(const kiln::Script& script, const Model& m, int64_t batch) {
  std::vector<kiln::Binding> bind = m.values;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    kiln::Shape s = m.inputs[i].shape;
    if (i == 0) s[0] = batch;
    bind.push_back(kiln::bind_tensor(m.inputs[i].name, kiln::DType::F32,
                                     std::vector<kiln::Dim>(s.begin(), s.end())));
  }
  return script.lower(m.fn, bind);
}

// Rows [begin, begin + count) of dim 0, packed.
kiln::Tensor slice0(const kiln::Tensor& t, int64_t begin, int64_t count) {
  kiln::Shape sizes = t.sizes();
  sizes[0] = count;
  return t.view_as_strided(sizes, t.strides(), begin * t.stride(0)).contiguous();
}

// Kiln's output against the interpreter on the first and last slices.
double check_with_interpreter(const kiln::Script& script, const Model& m,
                              const std::vector<kiln::Tensor>& inputs, const kiln::Tensor& got) {
  kiln::Function f = lower(script, m, m.slice);
  SampleCheck chk;
  for (int64_t begin : {int64_t{0}, m.batch - m.slice}) {
    std::vector<kiln::Tensor> in = inputs;
    in[0] = slice0(inputs[0], begin, m.slice);
    kiln::Tensor want = f.run_interpreter(in).at(0).to(kiln::DType::F64);
    kiln::Tensor mine = slice0(got, begin, m.slice);
    const double* wp = want.data<double>();
    const float* gp = mine.data<float>();
    for (int64_t i = 0; i < want.numel(); ++i) chk.add(gp[i], wp[i]);
  }
  return chk.max_err();
}

double gelu(double v) {
  return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
}

// gelu(x @ w1 + b1) @ w2 + b2 in double on four spread rows.
double check_mlp(const std::vector<kiln::Tensor>& in, const kiln::Tensor& got) {
  const int64_t n = in[0].size(0), d = in[0].size(1), h = in[1].size(1);
  const float *x = in[0].data<float>(), *w1 = in[1].data<float>(), *b1 = in[2].data<float>();
  const float *w2 = in[3].data<float>(), *b2 = in[4].data<float>(), *y = got.data<float>();
  SampleCheck chk;
  std::vector<double> hid(static_cast<size_t>(h)), out(static_cast<size_t>(d));
  for (int64_t r : {int64_t{0}, n / 3, 2 * n / 3, n - 1}) {
    std::fill(hid.begin(), hid.end(), 0.0);
    for (int64_t k = 0; k < d; ++k) {
      for (int64_t j = 0; j < h; ++j) hid[size_t(j)] += double(x[r * d + k]) * w1[k * h + j];
    }
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t j = 0; j < h; ++j) {
      const double a = gelu(hid[size_t(j)] + b1[j]);
      for (int64_t c = 0; c < d; ++c) out[size_t(c)] += a * w2[j * d + c];
    }
    for (int64_t c = 0; c < d; ++c) chk.add(y[r * d + c], out[size_t(c)] + b2[c]);
  }
  return chk.max_err();
}

// Multiply-adds of the MLP (2 flops each): both matmuls; GELU and the biases
// are not counted.
double mlp_flops(const Model& m) {
  const double n = double(m.inputs[0].shape[0]), d = double(m.inputs[0].shape[1]),
               h = double(m.inputs[1].shape[1]);
  return 2.0 * 2.0 * n * d * h;
}

}  // namespace

ModelCase model_case(const std::string& name, bool smoke) {
  auto m = std::make_shared<const Model>(model(name, smoke));
  auto script = std::make_shared<const kiln::Script>(
      kiln::Script::from_file(std::string(KILN_SOURCE_DIR) + "/" + m->file));
  ModelCase c;
  c.fn = lower(*script, *m, m->batch);
  for (const ModelInput& in : m->inputs) {
    c.inputs.push_back(make_input(in));
    c.shapes += (c.shapes.empty() ? "" : ", ") + in.name + " " + dims(in.shape);
  }
  if (m->file == "examples/mlp.kiln") c.flops = mlp_flops(*m);
  auto inputs = std::make_shared<const std::vector<kiln::Tensor>>(c.inputs);
  c.check = [m, script, inputs, name](const kiln::Tensor& y) {
    return name == "mlp_issue6" ? check_mlp(*inputs, y)
                                : check_with_interpreter(*script, *m, *inputs, y);
  };
  return c;
}

namespace {

ModelResult run_model(const std::string& name, bool smoke, const Budget& budget) {
  const ModelCase c = model_case(name, smoke);
  ModelResult out;
  out.shapes = c.shapes;
  // Fused first, so its compile time is not shortened by kernels the
  // unfused compile left in the cache.
  int64_t t0 = monotonic_ns();
  kiln::CompiledFunction cf = kiln::compile(c.fn);
  const double compile_s = since(t0);
  kiln::CompileOptions unfused;
  unfused.fuse = false;
  out.kernels_unfused = kiln::compile(c.fn, unfused).num_kernels();
  out.row = run_budgeted(cf, c.inputs, budget, c.check);
  out.row.compile_s = compile_s;
  out.row.input_sum = input_sum(c.inputs);
  out.row.kernels = cf.num_kernels();
  out.row.flops = c.flops;
  return out;
}

}  // namespace

ModelResult run_mlp_row(bool smoke, const Budget& budget) {
  return run_model("mlp_issue6", smoke, budget);
}

std::vector<std::string> example_names() {
  return {"mlp", "transformer", "conv_block", "gpt2_attention"};
}

ModelResult run_example(const std::string& name, bool smoke, const Budget& budget) {
  return run_model(name, smoke, budget);
}

}  // namespace kiln::bench
