// Recursive-descent JSON parser (RFC 8259; \u escapes decoded to UTF-8).
#include "tests/conformance/json.h"

#include <cstdlib>

#include "kiln/error.h"

namespace kiln::test {

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  Json document() {
    Json v = value();
    ws();
    if (p_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("json: " + what + " at offset " + std::to_string(p_));
  }
  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t'))
      ++p_;
  }
  bool eat(char c) {
    ws();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(p_, n, w) == 0) {
      p_ += n;
      return true;
    }
    return false;
  }

  Json value() {
    ws();
    if (p_ >= s_.size()) fail("unexpected end");
    Json v;
    char c = s_[p_];
    if (c == '{') {
      ++p_;
      v.kind_ = Json::Kind::Object;
      if (eat('}')) return v;
      do {
        ws();
        std::string key = string();
        expect(':');
        v.object_.emplace_back(key, value());
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++p_;
      v.kind_ = Json::Kind::Array;
      if (eat(']')) return v;
      do {
        v.array_.push_back(value());
      } while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind_ = Json::Kind::String;
      v.text_ = string();
    } else if (word("true") || word("false")) {
      v.kind_ = Json::Kind::Bool;
      v.bool_ = s_[p_ - 1] == 'e' && s_[p_ - 2] == 'u';
    } else if (word("null")) {
      v.kind_ = Json::Kind::Null;
    } else if (c == '-' || (c >= '0' && c <= '9') || word("NaN") || word("Infinity")) {
      v.kind_ = Json::Kind::Number;
      size_t b = p_;
      if (s_[b - 1] == 'N' || s_[b - 1] == 'y') {  // NaN / Infinity (Python's json writes them)
        v.text_ = s_[b - 1] == 'N' ? "nan" : "inf";
        return v;
      }
      if (s_[p_] == '-') ++p_;
      if (word("Infinity")) {
        v.text_ = "-inf";
        return v;
      }
      while (p_ < s_.size() && std::string("0123456789.eE+-").find(s_[p_]) != std::string::npos)
        ++p_;
      v.text_ = s_.substr(b, p_ - b);
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string string() {
    if (p_ >= s_.size() || s_[p_] != '"') fail("expected a string");
    ++p_;
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= s_.size()) fail("bad escape");
      char e = s_[p_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (p_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned cp = unsigned(std::strtoul(s_.substr(p_, 4).c_str(), nullptr, 16));
          p_ += 4;
          if (cp < 0x80) {
            out += char(cp);
          } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
          } else {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          out += e;
          break;
      }
    }
    if (p_ >= s_.size()) fail("unterminated string");
    ++p_;
    return out;
  }

  const std::string& s_;
  size_t p_ = 0;
};

Json Json::parse(const std::string& text) {
  return JsonParser(text).document();
}

bool Json::as_bool() const {
  if (kind_ != Kind::Bool) throw Error("json: expected a bool");
  return bool_;
}
double Json::as_double() const {
  if (kind_ != Kind::Number) throw Error("json: expected a number");
  return std::strtod(text_.c_str(), nullptr);
}
int64_t Json::as_int() const {
  if (kind_ != Kind::Number) throw Error("json: expected a number");
  return std::strtoll(text_.c_str(), nullptr, 10);
}
const std::string& Json::as_string() const {
  if (kind_ != Kind::String) throw Error("json: expected a string");
  return text_;
}
const std::vector<Json>& Json::as_array() const {
  if (kind_ != Kind::Array) throw Error("json: expected an array");
  return array_;
}
const std::vector<std::pair<std::string, Json>>& Json::items() const {
  if (kind_ != Kind::Object) throw Error("json: expected an object");
  return object_;
}
bool Json::has(const std::string& key) const {
  if (kind_ != Kind::Object) return false;
  for (const auto& [k, v] : object_) {
    if (k == key) return true;
  }
  return false;
}
const Json& Json::at(const std::string& key) const {
  for (const auto& [k, v] : items()) {
    if (k == key) return v;
  }
  throw Error("json: missing key '" + key + "'");
}

}  // namespace kiln::test
