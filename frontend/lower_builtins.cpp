// torch functions that are answered at compile time rather than by an op:
// torch.jit.annotate / is_scripting / is_tracing (what TorchScript code
// contains), torch.finfo / torch.iinfo and their fields (.min, .max, .eps, ...).
//
// A finfo/iinfo object is a namespace of constants, so it is a Module Val
// ("torch.finfo" / "torch.iinfo") whose dtype says which type it describes.
#include <cmath>
#include <limits>

#include "frontend/lower.h"

namespace kiln::frontend {

namespace {

struct FloatInfo {
  int64_t bits;
  double max, eps, tiny, resolution;
};

std::optional<FloatInfo> float_info(DType d) {
  switch (d) {
    case DType::F16:
      return FloatInfo{16, 65504.0, 0.0009765625, 6.103515625e-05, 0.001};
    case DType::BF16:
      return FloatInfo{16, 3.3895313892515355e+38, 0.0078125, 1.1754943508222875e-38, 0.01};
    case DType::F32:
      return FloatInfo{32, double(std::numeric_limits<float>::max()),
                       double(std::numeric_limits<float>::epsilon()),
                       double(std::numeric_limits<float>::min()), 1e-06};
    case DType::F64:
      return FloatInfo{64, std::numeric_limits<double>::max(),
                       std::numeric_limits<double>::epsilon(), std::numeric_limits<double>::min(),
                       1e-15};
    default:
      return std::nullopt;
  }
}

struct IntInfo {
  int64_t bits, min, max;
};

std::optional<IntInfo> int_info(DType d) {
  switch (d) {
    case DType::I8:
      return IntInfo{8, INT8_MIN, INT8_MAX};
    case DType::U8:
      return IntInfo{8, 0, UINT8_MAX};
    case DType::I16:
      return IntInfo{16, INT16_MIN, INT16_MAX};
    case DType::I32:
      return IntInfo{32, INT32_MIN, INT32_MAX};
    case DType::I64:
      return IntInfo{64, INT64_MIN, INT64_MAX};
    default:
      return std::nullopt;
  }
}

// PyTorch's spelling, as in its messages: torch.int32, not i32.
std::string torch_name(DType d) {
  for (const char* n : {"float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16",
                        "int32", "int64", "bool"}) {
    if (torch_dtype(n) == d) return std::string("torch.") + n;
  }
  return dtype_name(d);
}

}  // namespace

Val Lowerer::call_torch_builtin(const std::string& name, const CallArgs& args) {
  auto count = [&](size_t lo, size_t hi) {
    if (!args.keywords.empty()) {
      fail(args.keywords[0].second.span, name + "() takes no keyword arguments here");
    }
    size_t n = args.positional.size();
    if (n < lo || n > hi) {
      std::string want =
          lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
      fail(n > hi ? args.positional[hi].span : args.callee,
           name + "() takes " + want + " argument" + (hi == 1 ? "" : "s") + " (" +
               std::to_string(n) + " given)");
    }
  };
  if (name == "torch.jit.is_scripting") {
    count(0, 0);
    return Val::bool_(true);  // a Kiln script is compiled, as a scripted function is
  }
  if (name == "torch.jit.is_tracing") {
    count(0, 0);
    return Val::bool_(false);
  }
  if (name == "torch.jit.annotate") {
    count(2, 2);  // (type, value): the type only informs TorchScript's checker
    return args.positional[1].val;
  }
  if (name == "torch.finfo" || name == "torch.iinfo") {
    bool is_float = name == "torch.finfo";
    count(is_float ? 0 : 1, 1);
    DType d = default_float();
    if (!args.positional.empty()) {
      const Val& v = args.positional[0].val;
      if (v.kind != Val::Kind::DType) {
        fail(args.positional[0].span,
             name + "() needs a dtype such as torch.float32 or x.dtype, got " + kind_name(v));
      }
      d = v.dtype;
      if (is_float ? !float_info(d) : !int_info(d)) {
        fail(args.positional[0].span,
             name + "() needs a" + (is_float ? " floating point" : "n integer") + " dtype, got " +
                 torch_name(d) + "; use torch." + (is_float ? "iinfo" : "finfo") + " for it");
      }
    }
    Val info = Val::named(Val::Kind::Module, name);
    info.dtype = d;
    return info;
  }
  fail(args.callee, "'" + name + "' is not supported");
}

Val Lowerer::type_info_attr(const Val& info, const std::string& name, const Span& at) {
  if (info.s == "torch.finfo") {
    FloatInfo f = *float_info(info.dtype);
    if (name == "bits") return Val::int_(f.bits);
    if (name == "max") return Val::float_(f.max);
    if (name == "min") return Val::float_(-f.max);
    if (name == "eps") return Val::float_(f.eps);
    if (name == "tiny" || name == "smallest_normal") return Val::float_(f.tiny);
    if (name == "resolution") return Val::float_(f.resolution);
    fail(at, "torch.finfo has no attribute '" + name +
                 "' (it has bits, min, max, eps, tiny, smallest_normal, resolution)");
  }
  IntInfo i = *int_info(info.dtype);
  if (name == "bits") return Val::int_(i.bits);
  if (name == "min") return Val::int_(i.min);
  if (name == "max") return Val::int_(i.max);
  fail(at, "torch.iinfo has no attribute '" + name + "' (it has bits, min, max)");
}

}  // namespace kiln::frontend
