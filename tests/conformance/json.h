// A small JSON reader for the conformance manifest: parses a document into a
// tree of Json values (null, bool, number, string, array, object). Numbers
// keep their text so integers stay exact. Errors throw kiln::Error with the
// byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  static Json parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool as_bool() const;
  double as_double() const;
  int64_t as_int() const;
  const std::string& as_string() const;
  const std::vector<Json>& as_array() const;
  // Object access: has(), and at() which throws kiln::Error naming a missing key.
  bool has(const std::string& key) const;
  const Json& at(const std::string& key) const;
  const std::vector<std::pair<std::string, Json>>& items() const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_;  // number text or string value
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

}  // namespace kiln::test
