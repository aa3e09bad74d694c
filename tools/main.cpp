// The `kiln` command-line driver: dispatches to one subcommand (tools/cmd_*.cpp)
// and maps errors to exit codes — 0 success, 1 user error (kiln::Error: bad
// file, bad input, unknown op), 2 internal error (kiln::InternalError, or any
// other exception, which is a Kiln bug).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tools/driver.h"

namespace kiln::cli {
namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args&);
  bool hidden;  // documented in docs/cli.md but kept out of the main listing
};

int cmd_help(const Args& args);

constexpr Command kCommands[] = {
    {"ops", "list the registered ops, or show one op's signature and doc", cmd_ops, false},
    {"check", "parse and verify a .kir graph and print it", cmd_check, false},
    {"run", "run a graph or script function on inputs", cmd_run, false},
    {"dump", "print one compilation stage (ast, graph, loops, llvm, plan, ...)", cmd_dump, false},
    {"explain", "list the kernels of a compiled function and why they are so", cmd_explain, false},
    {"backends", "list the backends and devices, and why one is unavailable", cmd_backends, false},
    {"help", "show help for kiln or for one command", cmd_help, false},
    {"show", "print the shape, dtype and values of a .npy file", cmd_show, true},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "kiln %s - a JIT-compiling tensor expression engine\n"
               "\n"
               "usage: kiln <command> [options]\n"
               "       kiln --help | --version\n"
               "\n"
               "commands:\n",
               version());
  for (const Command& c : kCommands) {
    if (!c.hidden) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  }
  std::fprintf(out,
               "\n"
               "Run 'kiln <command> --help' for a command's options.\n"
               "Exit codes: 0 success, 1 user error, 2 internal error.\n");
}

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// Levenshtein distance, for "did you mean" on a mistyped command.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

[[noreturn]] void unknown_command(const std::string& name) {
  std::string msg = "unknown command '" + name + "'";
  const Command* best = nullptr;
  size_t best_d = 3;
  for (const Command& c : kCommands) {
    size_t d = distance(name, c.name);
    if (d < best_d) best = &c, best_d = d;
  }
  if (best) msg += "; did you mean '" + std::string(best->name) + "'?";
  msg += " (commands:";
  for (const Command& c : kCommands) {
    if (!c.hidden) msg += std::string(" ") + c.name;
  }
  throw Error(msg + "; see 'kiln --help')");
}

int cmd_help(const Args& args) {
  ArgReader r("help", args);
  std::optional<std::string> topic;
  while (!r.done()) {
    if (r.help()) {
      std::printf("usage: kiln help [COMMAND]\n\nShows kiln's usage, or COMMAND's options.\n");
      return 0;
    }
    if (auto p = r.positional(); p && !topic) {
      topic = p;
      continue;
    }
    r.unknown();
  }
  if (!topic) {
    print_usage(stdout);
    return 0;
  }
  const Command* c = find_command(*topic);
  if (!c) unknown_command(*topic);
  return c->run({"--help"});
}

// Prints a user error. Diagnostics that already carry "file:line:col: error:"
// print as they are; other messages get the "error: " prefix.
void print_user_error(const std::string& msg) {
  bool is_diagnostic = msg.find(": error: ") != std::string::npos;
  std::fprintf(stderr, is_diagnostic ? "%s\n" : "error: %s\n", msg.c_str());
}

int run_main(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(stderr);
    return 1;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") {
    print_usage(stdout);
    return 0;
  }
  if (first == "--version" || first == "version") {
    std::printf("kiln %s\n", version());
    return 0;
  }
  const Command* c = find_command(first);
  if (!c) unknown_command(first);
  return c->run(Args(args.begin() + 1, args.end()));
}

}  // namespace
}  // namespace kiln::cli

int main(int argc, char** argv) {
  try {
    int rc = kiln::cli::run_main(argc, argv);
    std::fflush(stdout);
    return rc;
  } catch (const kiln::InternalError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    std::fprintf(stderr, "This is a bug in Kiln; please report it with the command line.\n");
    return 2;
  } catch (const kiln::Error& e) {
    std::fflush(stdout);
    kiln::cli::print_user_error(e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "internal error: unexpected exception: %s\n", e.what());
    return 2;
  } catch (...) {
    std::fflush(stdout);
    std::fprintf(stderr, "internal error: unknown exception\n");
    return 2;
  }
}
