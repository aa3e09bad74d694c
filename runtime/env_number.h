// Whole numbers from environment variables, checked: digits only, no
// overflow, inside [min, max]. Anything else is reported once per variable on
// stderr ("kiln: warning: ignoring NAME=VALUE: ...; using DEFAULT") and the
// default is used, so a typo never turns into 0 or a wrapped value.
#pragma once

#include <cstdint>

namespace kiln::runtime {

// The value of `name` when it is set to a decimal integer in [min, max];
// `fallback` when it is unset or empty, and (after the warning) when invalid.
uint64_t env_uint(const char* name, uint64_t fallback, uint64_t min, uint64_t max);

}  // namespace kiln::runtime
