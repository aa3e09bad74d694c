// Errors raised to Python as kiln's own exception classes.
//
// The classes live in python/kiln/errors.py (so they are ordinary Python
// classes with the base classes Python users expect: ScriptError is a
// SyntaxError, ShapeError a ValueError, ...). C++ throws PyError with a kind;
// the module's exception translator asks kiln.errors.make(kind, message) for
// the exception object (which parses file:line:col out of located messages)
// and raises it.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln::python {

enum class ErrorKind : uint8_t {
  Script,    // a located error in the script (parse or lowering)
  Shape,     // sizes that do not fit
  DType,     // element types that do not fit, or that Kiln lacks
  Argument,  // wrong number, name or kind of arguments
  Device,    // memory or devices Kiln cannot use
  Internal,  // a broken invariant inside Kiln (a bug)
  Other      // any other kiln::Error
};

const char* error_kind_name(ErrorKind k);  // "script", "shape", ...

struct PyError : std::runtime_error {
  PyError(ErrorKind k, const std::string& message) : std::runtime_error(message), kind(k) {}
  ErrorKind kind;
};

// The kind of a kiln::Error's message: located messages ("file:line:col:
// error: ...") are Script errors unless they are about shapes or dtypes
// (then Shape/DType, still located); unlocated ones by their wording.
ErrorKind classify(const std::string& message, bool internal);

}  // namespace kiln::python
