// env_uint: strict parsing of numeric environment variables (see env_number.h).
#include "runtime/env_number.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace kiln::runtime {

namespace {

// All of `s` as a decimal number, or nothing (empty, a sign, a non-digit, or
// more than 2^64 - 1).
std::optional<uint64_t> parse_decimal(const std::string& s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// The value shown in a warning: at most 40 characters, control bytes escaped.
std::string shown(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

}  // namespace

uint64_t env_uint(const char* name, uint64_t fallback, uint64_t min, uint64_t max) {
  const char* raw = std::getenv(name);
  if (!raw || !*raw) return fallback;
  std::string text(raw);
  std::optional<uint64_t> v = parse_decimal(text);
  if (v && *v >= min && *v <= max) return *v;
  static std::mutex mu;
  // Once per variable and value; lives until exit.
  static std::set<std::string>* warned = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  if (warned->insert(std::string(name) + "=" + text).second) {
    std::fprintf(stderr,
                 "kiln: warning: ignoring %s=%s: expected a whole number from %llu to %llu; "
                 "using %llu\n",
                 name, shown(text).c_str(), static_cast<unsigned long long>(min),
                 static_cast<unsigned long long>(max), static_cast<unsigned long long>(fallback));
  }
  return fallback;
}

}  // namespace kiln::runtime
