// ArgReader: the few argument shapes the driver accepts, with errors that say
// which subcommand and option went wrong.
#include "tools/driver.h"

namespace kiln::cli {

bool ArgReader::help() {
  if (done() || (args_[pos_] != "-h" && args_[pos_] != "--help")) return false;
  ++pos_;
  return true;
}

bool ArgReader::flag(std::string_view name) {
  if (done()) return false;
  const std::string& a = args_[pos_];
  if (a.size() == name.size() + 2 && a.starts_with("--") && a.substr(2) == name) {
    ++pos_;
    return true;
  }
  if (a.starts_with("--") && a.substr(2).starts_with(name) && a.size() > name.size() + 2 &&
      a[name.size() + 2] == '=') {
    throw Error(command_ + ": option '--" + std::string(name) + "' takes no value");
  }
  return false;
}

std::optional<std::string> ArgReader::value(std::initializer_list<std::string_view> names) {
  if (done()) return std::nullopt;
  const std::string& a = args_[pos_];
  if (!a.starts_with("--")) return std::nullopt;
  std::string_view body = std::string_view(a).substr(2);
  for (std::string_view name : names) {
    if (body == name) {
      KILN_USER_CHECK(pos_ + 1 < args_.size(),
                      command_ << ": option '--" << name << "' needs a value");
      pos_ += 2;
      return args_[pos_ - 1];
    }
    if (body.starts_with(name) && body.size() > name.size() && body[name.size()] == '=') {
      ++pos_;
      return std::string(body.substr(name.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<std::string> ArgReader::positional() {
  if (done()) return std::nullopt;
  const std::string& a = args_[pos_];
  // A lone "-" is positional (conventionally stdin), other dashes are options.
  if (a.size() > 1 && a[0] == '-') return std::nullopt;
  ++pos_;
  return a;
}

void ArgReader::unknown() const {
  const std::string& a = args_[pos_];
  if (a.size() > 1 && a[0] == '-') {
    throw Error(command_ + ": unknown option '" + a + "' (see 'kiln " + command_ + " --help')");
  }
  throw Error(command_ + ": unexpected argument '" + a + "' (see 'kiln " + command_ + " --help')");
}

}  // namespace kiln::cli
