// Signature text of the op table -> SigParam list (see op_signature.h).
#include "frontend/op_signature.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "kiln/error.h"

namespace kiln::frontend {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

// Splits at commas outside brackets and quotes; unbalanced text is an error.
std::vector<std::string> split_top_level(const std::string& text, const std::string& what) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')') {
      KILN_USER_CHECK(--depth >= 0, "unbalanced '" << c << "' in " << what);
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  KILN_USER_CHECK(depth == 0 && !quote, "unclosed bracket or quote in " << what);
  parts.push_back(trim(cur));
  return parts;
}

bool parse_int(const std::string& t, int64_t& out) {
  const char* b = t.data();
  const char* e = b + t.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

bool parse_float(const std::string& t, double& out) {
  if (t == "inf" || t == "math.inf") return out = INFINITY, true;
  if (t == "-inf" || t == "-math.inf") return out = -INFINITY, true;
  if (t == "nan" || t == "math.nan") return out = NAN, true;
  if (t.empty() || t.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  // Digits alone are an int; one too large for int64 is not quietly a float.
  if (t.find_first_of(".eE") == std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return errno != ERANGE && end == t.c_str() + t.size();
}

}  // namespace

Val parse_signature_default(const std::string& raw) {
  std::string text = trim(raw);
  if (text == "None") return Val::none();
  if (text == "True") return Val::bool_(true);
  if (text == "False") return Val::bool_(false);
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
      text.back() == text.front()) {
    return Val::str(text.substr(1, text.size() - 2));
  }
  if (text.size() >= 2 && ((text.front() == '[' && text.back() == ']') ||
                           (text.front() == '(' && text.back() == ')'))) {
    Val::Kind kind = text.front() == '[' ? Val::Kind::List : Val::Kind::Tuple;
    std::string inner = trim(text.substr(1, text.size() - 2));
    std::vector<Val> items;
    if (!inner.empty()) {
      std::vector<std::string> parts = split_top_level(inner, "default '" + text + "'");
      // A trailing comma ("(2,)") leaves one empty part at the end.
      if (parts.size() > 1 && parts.back().empty()) parts.pop_back();
      for (const std::string& p : parts) {
        KILN_USER_CHECK(!p.empty(), "empty element in default '" << text << "'");
        items.push_back(parse_signature_default(p));
      }
    }
    return Val::tuple(std::move(items), kind);
  }
  int64_t i = 0;
  if (parse_int(text, i)) return Val::int_(i);
  double d = 0;
  if (parse_float(text, d)) return Val::float_(d);
  KILN_USER_ERROR("invalid default value '"
                  << text
                  << "' (expected None, True, False, an int in int64 range, a float, a "
                     "quoted string, or a list or tuple of these)");
}

std::vector<SigParam> parse_signature(const std::string& sig) {
  std::vector<SigParam> out;
  bool kw_only = false;
  try {
    for (std::string part : split_top_level(sig, "the signature")) {
      if (part.empty()) continue;
      if (part == "*") {
        kw_only = true;
        continue;
      }
      SigParam p;
      p.kw_only = kw_only;
      if (part[0] == '*') {
        p.varargs = true;
        part.erase(part.begin());
        kw_only = true;
      }
      size_t eq = part.find('=');
      if (eq != std::string::npos) {
        p.has_default = true;
        std::string name = trim(part.substr(0, eq));
        try {
          p.default_value = parse_signature_default(part.substr(eq + 1));
        } catch (const Error& e) {
          KILN_USER_ERROR("parameter '" << name << "': " << e.what());
        }
        part = name;
      }
      KILN_USER_CHECK(!part.empty(), "a parameter has no name");
      p.name = part;
      out.push_back(p);
    }
  } catch (const Error& e) {
    KILN_USER_ERROR("op signature '" << sig << "': " << e.what());
  }
  return out;
}

}  // namespace kiln::frontend
