#include "python/src/errors.h"

#include <regex>

namespace kiln::python {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Script: return "script";
    case ErrorKind::Shape: return "shape";
    case ErrorKind::DType: return "dtype";
    case ErrorKind::Argument: return "argument";
    case ErrorKind::Device: return "device";
    case ErrorKind::Internal: return "internal";
    case ErrorKind::Other: return "other";
  }
  return "other";
}

namespace {

bool has(const std::string& s, const char* word) {
  return s.find(word) != std::string::npos;
}

// The wording of the first line decides; Kiln's messages name the mismatch.
ErrorKind by_wording(const std::string& line) {
  if (has(line, "unknown argument") || has(line, "missing input") ||
      has(line, "missing argument") || has(line, "inputs given") || has(line, "expected an array"))
    return ErrorKind::Argument;
  if (has(line, "dtype")) return ErrorKind::DType;
  if (has(line, "shape") || has(line, "dims differ") || has(line, "rank") ||
      has(line, "broadcast") || has(line, " size") || has(line, "bound to") ||
      has(line, " differ"))
    return ErrorKind::Shape;
  if (has(line, "device") || has(line, "CUDA") || has(line, "cuda")) return ErrorKind::Device;
  return ErrorKind::Other;
}

}  // namespace

ErrorKind classify(const std::string& message, bool internal) {
  if (internal) return ErrorKind::Internal;
  const std::string first = message.substr(0, message.find('\n'));
  static const std::regex located(R"(^.*:\d+:\d+: error: .*)");
  if (std::regex_match(first, located)) {
    ErrorKind k = by_wording(first);
    return k == ErrorKind::Other || k == ErrorKind::Device ? ErrorKind::Script : k;
  }
  return by_wording(first);
}

}  // namespace kiln::python
