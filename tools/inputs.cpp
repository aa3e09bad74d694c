// Input specs of `kiln run` / `kiln dump`: generators (randn:f32:32x784), .npy
// paths and non-tensor values (dim=1, eps=1e-5, shape=[2,3]), plus the short
// printed summary of a tensor.
#include <charconv>
#include <cmath>
#include <limits>

#include "tools/driver.h"

namespace kiln::cli {

InputArg split_input(const std::string& arg) {
  size_t eq = arg.find('=');
  KILN_USER_CHECK(eq != std::string::npos && eq > 0,
                  "--input '" << arg
                              << "': expected NAME=SPEC (e.g. x=data.npy, x=randn:f32:2x3, "
                                 "dim=1)");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<int64_t> parse_int(std::string_view s) {
  std::string t = trim(s);
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  std::string t = trim(s);
  if (t == "inf" || t == "+inf") return std::numeric_limits<double>::infinity();
  if (t == "-inf") return -std::numeric_limits<double>::infinity();
  if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  std::string t = trim(s);
  if (t == "true" || t == "True" || t == "1") return true;
  if (t == "false" || t == "False" || t == "0") return false;
  return std::nullopt;
}

// "[1, 2]" or "1,2" -> the items; "[]" -> none.
std::vector<std::string> list_items(std::string_view s) {
  std::string t = trim(s);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::vector<std::string> items;
  if (trim(t).empty()) return items;
  size_t start = 0;
  while (true) {
    size_t comma = t.find(',', start);
    items.push_back(trim(std::string_view(t).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

bool looks_like_list(std::string_view s) {
  std::string t = trim(s);
  return !t.empty() && t.front() == '[';
}

const char* const kGenerators[] = {"randn", "rand", "zeros", "ones", "arange"};

}  // namespace

std::optional<Generator> parse_generator(const std::string& spec) {
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  bool known = false;
  for (const char* g : kGenerators) known = known || kind == g;
  if (!known) return std::nullopt;
  Generator gen;
  gen.kind = kind;
  if (colon == std::string::npos) return gen;  // bare: type from the declaration
  std::string rest = spec.substr(colon + 1);
  size_t colon2 = rest.find(':');
  KILN_USER_CHECK(colon2 != std::string::npos,
                  "generator '" << spec << "': expected " << kind << ":DTYPE:DIMS, e.g. " << kind
                                << ":f32:2x3 (0-dim: " << kind << ":f32:)");
  std::string dtype_text = rest.substr(0, colon2);
  std::string dims_text = rest.substr(colon2 + 1);
  std::optional<DType> dtype = parse_dtype(dtype_text);
  KILN_USER_CHECK(dtype, "generator '" << spec << "': unknown dtype '" << dtype_text
                                       << "' (known: bool, i8, u8, i16, i32, i64, f16, bf16, "
                                          "f32, f64)");
  TensorSpec type{*dtype, {}};
  if (!dims_text.empty() && dims_text != "scalar") {
    size_t start = 0;
    int64_t numel = 1;
    while (true) {
      size_t x = dims_text.find('x', start);
      std::string item = dims_text.substr(start, x - start);
      std::optional<int64_t> d = parse_int(item);
      KILN_USER_CHECK(d && *d >= 0, "generator '" << spec << "': bad dim '" << item
                                                  << "' (dims are non-negative integers "
                                                     "joined by 'x', e.g. 32x784)");
      // Refuse sizes whose element count overflows (or could never be allocated).
      KILN_USER_CHECK(*d == 0 || numel <= (int64_t{1} << 40) / *d,
                      "generator '" << spec << "': too many elements");
      numel *= *d;
      type.dims.push_back(*d);
      KILN_USER_CHECK(int64_t(type.dims.size()) <= kMaxRank,
                      "generator '" << spec << "': more than " << kMaxRank
                                    << " dims (Kiln's limit on a tensor's rank)");
      if (x == std::string::npos) break;
      start = x + 1;
    }
  }
  gen.type = type;
  return gen;
}

Tensor generate(const Generator& g, const TensorSpec& type, uint64_t seed) {
  Shape shape;
  for (const Dim& d : type.dims) {
    KILN_INTERNAL_CHECK(d.is_static(), "generate: symbolic dim " << d.symbol);
    shape.push_back(d.value);
  }
  if (g.kind == "randn" || g.kind == "rand") {
    KILN_USER_CHECK(is_floating(type.dtype), g.kind << ": needs a floating dtype (f16, bf16, f32, "
                                                       "f64), got "
                                                    << dtype_name(type.dtype)
                                                    << "; use zeros, ones or arange");
    return g.kind == "randn" ? Tensor::randn(shape, seed, type.dtype)
                             : Tensor::rand(shape, seed, type.dtype);
  }
  if (g.kind == "zeros") return Tensor::zeros(shape, type.dtype);
  if (g.kind == "ones") return Tensor::ones(shape, type.dtype);
  // arange: 0, 1, 2, ... in row-major order, handy for checkable outputs.
  int64_t n = shape_numel(shape);
  Tensor flat = Tensor::arange(0, static_cast<double>(n), 1, type.dtype);
  return flat.view_as_strided(shape, contiguous_strides(shape), 0);
}

namespace {

TensorSpec resolve_type(const std::string& name, const std::string& spec, const Generator& g,
                        const std::optional<TensorSpec>& declared) {
  if (g.type) return *g.type;
  KILN_USER_CHECK(declared, "input '" << name << "': '" << spec
                                      << "' needs a dtype and dims here, e.g. " << g.kind
                                      << ":f32:2x3");
  for (const Dim& d : declared->dims) {
    KILN_USER_CHECK(d.is_static(), "input '" << name << "': declared as " << declared->str()
                                             << ", whose dim " << d.symbol
                                             << " is symbolic; give dims, e.g. " << g.kind << ":"
                                             << dtype_name(declared->dtype) << ":2x3");
  }
  return *declared;
}

}  // namespace

Tensor tensor_from_spec(const std::string& name, const std::string& spec,
                        const std::optional<TensorSpec>& declared, uint64_t seed) {
  if (std::optional<Generator> g = parse_generator(spec)) {
    return generate(*g, resolve_type(name, spec, *g, declared), seed);
  }
  KILN_USER_CHECK(!spec.empty(), "input '" << name
                                           << "': empty spec; give PATH.npy or a "
                                              "generator such as randn:f32:2x3");
  bool value_like = parse_double(spec) || parse_bool(spec) || looks_like_list(spec);
  KILN_USER_CHECK(!value_like || spec.ends_with(".npy"),
                  "input '" << name
                            << "' is a tensor; give PATH.npy or a generator such as "
                               "randn:f32:2x3, not '"
                            << spec << "'");
  try {
    return read_npy(spec);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw Error("input '" + name + "': " + e.what());
  }
}

TensorSpec type_from_spec(const std::string& name, const std::string& spec,
                          const std::optional<TensorSpec>& declared) {
  if (std::optional<Generator> g = parse_generator(spec)) {
    return resolve_type(name, spec, *g, declared);
  }
  Tensor t = tensor_from_spec(name, spec, declared, 0);
  return TensorSpec{t.dtype(), std::vector<Dim>(t.sizes().begin(), t.sizes().end())};
}

std::vector<std::string> tensor_list_specs(const std::string& name, const std::string& spec) {
  std::string t = trim(spec);
  KILN_USER_CHECK(t.size() >= 2 && t.front() == '[' && t.back() == ']',
                  "input '" << name << "' is a List[Tensor]; give its tensors in brackets, e.g. "
                            << name << "=[a.npy,randn:f32:2x3], not '" << spec << "'");
  std::vector<std::string> items = list_items(t);
  for (size_t k = 0; k < items.size(); ++k) {
    KILN_USER_CHECK(!items[k].empty(), "input '" << name << "': item " << k
                                                 << " of the list is empty in '" << spec << "'");
  }
  return items;
}

Attr parse_value(const std::string& name, const std::string& text, ParamKind kind) {
  auto bad = [&](const char* expected) -> Error {
    return Error("input '" + name + "': expected " + expected + ", got '" + text + "'");
  };
  switch (kind) {
    case ParamKind::Int: {
      if (auto v = parse_int(text)) return *v;
      throw bad("an int (e.g. 1, -2)");
    }
    case ParamKind::Float: {
      if (auto v = parse_double(text)) return *v;
      throw bad("a float (e.g. 1e-5, 0.5)");
    }
    case ParamKind::Bool: {
      if (auto v = parse_bool(text)) return *v;
      throw bad("a bool (true or false)");
    }
    case ParamKind::Str: {
      std::string t = text;
      if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front()) {
        t = t.substr(1, t.size() - 2);
      }
      return t;
    }
    case ParamKind::IntList: {
      std::vector<int64_t> out;
      for (const std::string& item : list_items(text)) {
        std::optional<int64_t> v = parse_int(item);
        if (!v) throw bad("a list of ints (e.g. [2,3])");
        out.push_back(*v);
      }
      return out;
    }
    case ParamKind::FloatList: {
      std::vector<double> out;
      for (const std::string& item : list_items(text)) {
        std::optional<double> v = parse_double(item);
        if (!v) throw bad("a list of floats (e.g. [0.5,1.0])");
        out.push_back(*v);
      }
      return out;
    }
    case ParamKind::TensorList:
      if (trim(text) == "none" || trim(text) == "None") return Attr();
      tensor_list_specs(name, text);  // reports the expected form
      throw bad("a list of tensors such as [a.npy,randn:f32:2x3]");
    case ParamKind::Tensor:
      if (trim(text) == "none" || trim(text) == "None") return Attr();  // Optional[Tensor]
      throw Error("input '" + name +
                  "' is a tensor; give PATH.npy or a generator such as "
                  "randn:f32:2x3, not '" +
                  text + "'");
    case ParamKind::Other:
      break;
  }
  // Unknown annotation: take the most specific reading.
  std::string t = trim(text);
  if (t == "none" || t == "None") return Attr();
  if (t == "true" || t == "True") return true;
  if (t == "false" || t == "False") return false;
  if (auto v = parse_int(t)) return *v;
  if (auto v = parse_double(t)) return *v;
  if (looks_like_list(t)) {
    std::vector<std::string> items = list_items(t);
    bool all_int = true;
    for (const std::string& item : items) all_int = all_int && parse_int(item).has_value();
    if (all_int) return parse_value(name, t, ParamKind::IntList);
    return parse_value(name, t, ParamKind::FloatList);
  }
  return parse_value(name, t, ParamKind::Str);
}

std::string tensor_summary(const Tensor& t) {
  std::vector<Dim> dims(t.sizes().begin(), t.sizes().end());
  std::string s = TensorSpec{t.dtype(), dims}.str() + "\n" + t.to_string();
  if (is_floating(t.dtype()) && t.numel() > 64) {
    // Streams over the output in place: a copy in f64 would double or
    // quadruple the memory a large output already takes.
    FloatStats st = float_stats(t);
    char buf[160];
    std::snprintf(buf, sizeof buf, "\nmin=%.6g max=%.6g mean=%.6g", st.min, st.max, st.mean);
    s += buf;
    if (st.nan_count) s += " nan_count=" + std::to_string(st.nan_count);
  }
  return s;
}

}  // namespace kiln::cli
