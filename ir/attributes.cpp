// Attribute values: printing in the text-IR form and typed access.
#include "ir/attributes.h"

#include <cmath>
#include <cstdio>

#include "kiln/error.h"

namespace kiln::ir {

namespace {

// Floats always print so the parser reads them back as floats, and exactly
// (17 significant digits), so text round trips lose nothing.
std::string float_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest spelling that reads back exactly.
  for (int prec = 1; prec <= 17; ++prec) {
    char shorter[40];
    std::snprintf(shorter, sizeof shorter, "%.*g", prec, v);
    if (std::strtod(shorter, nullptr) == v) {
      std::snprintf(buf, sizeof buf, "%s", shorter);
      break;
    }
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string tensor_str(const Tensor& t) {
  std::string s = "tensor<" + std::string(dtype_name(t.dtype())) + shape_str(t.sizes()) + ">[";
  Tensor c = t.contiguous();
  Tensor flat = c.view_as_strided({c.numel()}, {1}, c.storage_offset());
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (i) s += ", ";
    std::vector<int64_t> idx{i};
    if (t.dtype() == DType::Bool) {
      s += flat.get_int(idx) ? "true" : "false";
    } else if (is_floating(t.dtype())) {
      s += float_str(flat.get(idx));
    } else {
      s += std::to_string(flat.get_int(idx));
    }
  }
  return s + "]";
}

const char* kind_name(const AttrValue& v) {
  static constexpr const char* kNames[] = {"none",  "bool",    "int",   "float", "string",
                                           "int[]", "float[]", "dtype", "tensor"};
  return kNames[v.index()];
}

}  // namespace

std::string attr_str(const AttrValue& v) {
  struct Printer {
    std::string operator()(const NoneAttr&) const { return "none"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return float_str(d); }
    std::string operator()(const std::string& s) const { return quote(s); }
    std::string operator()(const std::vector<int64_t>& xs) const {
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double>& xs) const {
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + float_str(xs[i]);
      return s + "]";
    }
    std::string operator()(DType t) const { return dtype_name(t); }
    std::string operator()(const Tensor& t) const { return tensor_str(t); }
  };
  return std::visit(Printer{}, v);
}

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const Tensor* ta = std::get_if<Tensor>(&a)) return ta->equal(std::get<Tensor>(b));
  if (const double* da = std::get_if<double>(&a)) {
    double db = std::get<double>(b);
    return *da == db || (std::isnan(*da) && std::isnan(db));
  }
  // Every other alternative has operator==; Tensor was handled above.
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return false;
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [k, v] : init) set(k, v);
}

bool Attrs::has(const std::string& name) const { return find(name) != nullptr; }

const AttrValue* Attrs::find(const std::string& name) const {
  for (const auto& [k, v] : items_) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Attrs::set(const std::string& name, AttrValue v) {
  for (auto& [k, old] : items_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  items_.emplace_back(name, std::move(v));
}

void Attrs::erase(const std::string& name) {
  std::erase_if(items_, [&](const auto& kv) { return kv.first == name; });
}

namespace {
const AttrValue& need(const Attrs& a, const std::string& name) {
  const AttrValue* v = a.find(name);
  KILN_USER_CHECK(v, "missing attribute '" << name << "'");
  return *v;
}
[[noreturn]] void wrong_kind(const std::string& name, const char* want, const AttrValue& v) {
  KILN_USER_ERROR("attribute '" << name << "' must be " << want << ", got " << kind_name(v) << " "
                                << attr_str(v));
}
}  // namespace

bool Attrs::get_bool(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* b = std::get_if<bool>(&v)) return *b;
  wrong_kind(name, "bool", v);
}

int64_t Attrs::get_int(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  wrong_kind(name, "int", v);
}

double Attrs::get_float(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
  wrong_kind(name, "float", v);
}

const std::string& Attrs::get_string(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  wrong_kind(name, "string", v);
}

std::vector<int64_t> Attrs::get_ints(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* xs = std::get_if<std::vector<int64_t>>(&v)) return *xs;
  if (auto* i = std::get_if<int64_t>(&v)) return {*i};
  wrong_kind(name, "int[]", v);
}

std::vector<double> Attrs::get_floats(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* xs = std::get_if<std::vector<double>>(&v)) return *xs;
  if (auto* is = std::get_if<std::vector<int64_t>>(&v)) return {is->begin(), is->end()};
  wrong_kind(name, "float[]", v);
}

DType Attrs::get_dtype(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* t = std::get_if<DType>(&v)) return *t;
  wrong_kind(name, "dtype", v);
}

const Tensor& Attrs::get_tensor(const std::string& name) const {
  const AttrValue& v = need(*this, name);
  if (auto* t = std::get_if<Tensor>(&v)) return *t;
  wrong_kind(name, "tensor", v);
}

bool Attrs::is_none(const std::string& name) const {
  const AttrValue* v = find(name);
  return !v || std::holds_alternative<NoneAttr>(*v);
}

bool Attrs::operator==(const Attrs& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].first != o.items_[i].first) return false;
    if (!attr_equal(items_[i].second, o.items_[i].second)) return false;
  }
  return true;
}

std::string Attrs::str() const {
  if (items_.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i) s += ", ";
    s += items_[i].first + " = " + attr_str(items_[i].second);
  }
  return s + "}";
}

}  // namespace kiln::ir
