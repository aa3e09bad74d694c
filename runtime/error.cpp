// Out-of-line throw helpers keep the checking macros small at every call site.
#include "kiln/error.h"

namespace kiln::detail {

void throw_user_error(const std::string& message) { throw Error(message); }

void throw_internal_error(const char* file, int line, const char* condition,
                          const std::string& message) {
  std::ostringstream os;
  os << "internal error: " << message << " [" << condition << " at " << file << ":" << line
     << "]";
  throw InternalError(os.str());
}

}  // namespace kiln::detail
