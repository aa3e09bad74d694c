// kiln::Error — the user-facing error channel — and the two checking macros.
//
// User mistakes (bad script, shape mismatch, missing input, corrupt file) throw
// kiln::Error with a message the user can act on. Broken internal invariants
// throw kiln::InternalError, whose message names the invariant. Both are
// streamed and cost nothing unless the check fails:
//
//   KILN_USER_CHECK(a.dim() == 2, "matmul: operand 'a' must be 2-D, got " << a.dim());
//   KILN_INTERNAL_CHECK(node->op() != nullptr, "node without op");
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(message) {}
};

namespace detail {
[[noreturn]] void throw_user_error(const std::string& message);
[[noreturn]] void throw_internal_error(const char* file, int line, const char* condition,
                                       const std::string& message);
}  // namespace detail

}  // namespace kiln

#define KILN_USER_CHECK(cond, msg)                   \
  do {                                               \
    if (!(cond)) {                                   \
      std::ostringstream kiln_check_os_;             \
      kiln_check_os_ << msg;                         \
      ::kiln::detail::throw_user_error(kiln_check_os_.str()); \
    }                                                \
  } while (0)

#define KILN_USER_ERROR(msg) KILN_USER_CHECK(false, msg)

#define KILN_INTERNAL_CHECK(cond, msg)                                                     \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream kiln_check_os_;                                                   \
      kiln_check_os_ << msg;                                                               \
      ::kiln::detail::throw_internal_error(__FILE__, __LINE__, #cond, kiln_check_os_.str()); \
    }                                                                                      \
  } while (0)
