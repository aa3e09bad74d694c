// Parsing of the op table's Python-like signature text ("input, dim=None,
// *, keepdim=False") into parameters with typed default values.
//
// Signatures are written by Kiln's own op table, but a typo in one must not
// take the process down: malformed text throws kiln::Error naming the
// signature and the parameter, never std::invalid_argument.
#pragma once

#include <string>
#include <vector>

#include "frontend/lower.h"

namespace kiln::frontend {

struct SigParam {
  std::string name;
  bool has_default = false;
  Val default_value;
  bool kw_only = false;
  bool varargs = false;
};

// Defaults may be None, True, False, an int, a float (also inf / -inf / nan),
// a quoted string, or a list / tuple of these ("[0, 1]", "(2,)").
Val parse_signature_default(const std::string& text);

// Parameters split at top-level commas (a list default keeps its own).
std::vector<SigParam> parse_signature(const std::string& sig);

}  // namespace kiln::frontend
