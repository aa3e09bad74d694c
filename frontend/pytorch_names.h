// What PyTorch itself provides, for messages about names Kiln lacks: a
// `torch.topk` that Kiln does not have yet is reported as exactly that, not
// as a misspelling of a Kiln name ("did you mean 'to'?"). One static table
// of torch.*, torch.nn.functional.*, torch.linalg.*, torch.special.* and
// Tensor method names (pytorch_names.cpp); it does not need to be complete,
// a name missing from it only falls back to the nearest-name suggestion.
#pragma once

#include <string>
#include <vector>

namespace kiln::frontend {

// `space`: "torch", "F" (torch.nn.functional), "Tensor" (methods),
// "torch.linalg", "torch.special", "torch.fft". True when PyTorch has `name` there.
bool is_pytorch_name(const std::string& space, const std::string& name);

// The message for `name`, which Kiln does not have in `space`: "'torch.topk'
// is a PyTorch function that Kiln does not support yet" when PyTorch has it
// (with a note for ops whose output shape depends on data), else "'<shown>'
// has no function '<name>'" with the nearest of `kiln_names` when one is close.
// `note` receives the note ("" when none).
std::string missing_name_message(const std::string& space, const std::string& name,
                                 const std::vector<std::string>& kiln_names, std::string& note);

}  // namespace kiln::frontend
