// Diagnostic collection and clang-style rendering (location, source line,
// caret and tildes under the offending span).
#include "frontend/diagnostics.h"

#include <algorithm>
#include <sstream>

#include "kiln/error.h"

namespace kiln::frontend {

SourceFile::SourceFile(std::string text, std::string filename)
    : text_(std::move(text)), filename_(std::move(filename)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string SourceFile::line(int n) const {
  if (n < 1 || size_t(n) > line_starts_.size()) return {};
  size_t begin = line_starts_[size_t(n - 1)];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  std::string s = text_.substr(begin, end - begin);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

void Diagnostics::error(const Span& span, std::string message, std::string note) {
  if (list_.size() >= kMaxErrors) return;
  // The same error at the same place twice (e.g. reported by an inlined callee
  // for two call sites) says nothing new.
  for (const Diagnostic& d : list_) {
    if (d.span.line == span.line && d.span.col == span.col && d.message == message) return;
  }
  list_.push_back({span, std::move(message), std::move(note)});
}

std::vector<Diagnostic> Diagnostics::take_from(size_t n) {
  std::vector<Diagnostic> out;
  if (n < list_.size()) {
    out.assign(list_.begin() + std::ptrdiff_t(n), list_.end());
    list_.resize(n);
  }
  return out;
}

std::string render_diagnostic(const SourceFile& file, const Diagnostic& d) {
  std::ostringstream os;
  os << file.filename() << ":" << d.span.line << ":" << d.span.col << ": error: " << d.message
     << "\n";
  std::string src = file.line(d.span.line);
  if (!src.empty()) {
    // Tabs become single spaces so the caret lines up in any terminal.
    std::replace(src.begin(), src.end(), '\t', ' ');
    os << src << "\n";
    int col = std::max(1, d.span.col);
    int end = d.span.end_line == d.span.line ? d.span.end_col : int(src.size()) + 1;
    end = std::min(end, int(src.size()) + 1);
    int begin = d.span.begin_col > 0 && d.span.begin_col < col ? d.span.begin_col : col;
    std::string marks(size_t(begin - 1), ' ');
    for (int c = begin; c < col; ++c) marks += '~';
    marks += '^';
    for (int c = col + 1; c < end; ++c) marks += '~';
    os << marks << "\n";
  }
  if (!d.note.empty()) os << "note: " << d.note << "\n";
  return os.str();
}

std::string Diagnostics::render() const {
  // In source order: the lexer, parser and lowering report in separate passes.
  std::vector<Diagnostic> sorted = list_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.span.line != b.span.line ? a.span.line < b.span.line : a.span.col < b.span.col;
  });
  std::string out;
  for (const Diagnostic& d : sorted) out += render_diagnostic(*file_, d);
  if (list_.size() > 1) out += std::to_string(list_.size()) + " errors generated.\n";
  return out;
}

void Diagnostics::throw_if_any() const {
  if (!list_.empty()) {
    std::string msg = render();
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw Error(msg);
  }
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t limit = std::max<size_t>(2, name.size() / 3);
  size_t best_dist = limit + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_dist || (d == best_dist && c < best)) {
      best = c;
      best_dist = d;
    }
  }
  return best;
}

}  // namespace kiln::frontend
