// Extras of the LLVM CPU backend beyond codegen::Backend (make_llvm_backend()
// is declared in codegen/backend.h).
#pragma once

#include <string>

namespace kiln::codegen {

// Makes C function `address` callable from JIT code as `name` (the target of a
// loop::ExternCall: void name(void* buffers..., scalars...)). Thread-safe; a
// later registration of the same name wins for modules compiled afterwards.
// Symbols exported by the process are found without registration.
void register_extern_symbol(const std::string& name, void* address);

}  // namespace kiln::codegen
