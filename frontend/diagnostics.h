// Source diagnostics for the script frontend: collects errors with a location
// and a span, renders them clang-style, and turns them into one kiln::Error.
//
//   f.kiln:3:9: error: unknown name 'w3'
//       h = w3 @ x
//           ^~
//
// Several independent errors can be collected in one run (the parser resyncs
// after a bad statement, the lowering after a bad statement); throw_if_any()
// raises them together.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::frontend {

// A 1-based position in the source, and the column one past the end of the
// span on the same line (end_col == col means a single caret). The underline
// may start before the position (begin_col), so `a + b` renders as ~~^~~.
struct Span {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;
  int begin_col = 0;  // 0: the underline starts at col
};

// The text of one file, split into lines for excerpts.
class SourceFile {
 public:
  SourceFile(std::string text, std::string filename);
  const std::string& text() const { return text_; }
  const std::string& filename() const { return filename_; }
  std::string line(int n) const;  // 1-based; "" when out of range
  ir::SourceLoc loc(const Span& s) const { return {filename_, s.line, s.col}; }

 private:
  std::string text_;
  std::string filename_;
  std::vector<size_t> line_starts_;
};

struct Diagnostic {
  Span span;
  std::string message;
  std::string note;  // optional second line ("note: ...") without location
};

class Diagnostics {
 public:
  explicit Diagnostics(std::shared_ptr<const SourceFile> file) : file_(std::move(file)) {}

  void error(const Span& span, std::string message, std::string note = {});
  bool has_errors() const { return !list_.empty(); }
  size_t count() const { return list_.size(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  // Removes and returns the diagnostics recorded after the first `n`: errors
  // whose report is deferred until the code they belong to is reached.
  std::vector<Diagnostic> take_from(size_t n);
  void add(const Diagnostic& d) { error(d.span, d.message, d.note); }
  // Every diagnostic rendered, one after another.
  std::string render() const;
  // Throws kiln::Error holding render() when any error was reported.
  void throw_if_any() const;
  // Stop collecting after this many: later errors are usually noise.
  static constexpr size_t kMaxErrors = 20;

 private:
  std::shared_ptr<const SourceFile> file_;
  std::vector<Diagnostic> list_;
};

// Renders one diagnostic with its source excerpt and caret underline.
std::string render_diagnostic(const SourceFile& file, const Diagnostic& d);

// The registered name closest to `name` by edit distance, or "" when none is
// close enough to be a plausible misspelling.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace kiln::frontend
