// Lexer for the graph IR text form: identifiers, %values, numbers, strings,
// punctuation; `#` comments are skipped, and those that read as a location
// ("# file:line:col") are kept by line so the parser can attach them to nodes.
#include "ir/text_lexer.h"

#include <cctype>
#include <cstdio>

#include "kiln/error.h"

namespace kiln::ir::text {

SourceText::SourceText(std::string_view text, std::string filename)
    : text_(text), filename_(std::move(filename)) {
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      std::string_view line = text.substr(start, i - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      start = i + 1;
    }
  }
}

void SourceText::error(int line, int col, const std::string& message) const {
  std::string out =
      filename_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + message;
  if (line >= 1 && static_cast<size_t>(line) <= lines_.size()) {
    std::string_view src = lines_[static_cast<size_t>(line) - 1];
    out += "\n" + std::string(src) + "\n";
    // Copy tabs so the caret lines up under the same tab stops.
    for (int i = 0; i + 1 < col; ++i) {
      out +=
          static_cast<size_t>(i) < src.size() && src[static_cast<size_t>(i)] == '\t' ? '\t' : ' ';
    }
    out += "^";
  }
  throw Error(out);
}

std::string Token::describe() const {
  switch (kind) {
    case Tok::End:
      return "end of input";
    case Tok::ValueName:
      return "'%" + text + "'";
    case Tok::String:
      return "a string";
    default:
      return "'" + text + "'";
  }
}

namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_value_char(char c) {
  return is_ident_char(c) || c == '.';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "file:line:col" with a positive line. The file part is everything before the
// last two colons (it may itself hold ':' or spaces), so any location the
// printer writes reads back.
bool parse_loc(std::string_view s, SourceLoc* loc) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  size_t c2 = s.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  size_t c1 = s.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return false;
  std::string_view file = s.substr(0, c1), line = s.substr(c1 + 1, c2 - c1 - 1),
                   col = s.substr(c2 + 1);
  auto number = [](std::string_view d, int* out) {
    if (d.empty() || d.size() > 9) return false;
    int v = 0;
    for (char c : d) {
      if (!is_digit(c)) return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  int l = 0, cl = 0;
  if (!number(line, &l) || !number(col, &cl) || l == 0) return false;
  *loc = SourceLoc{std::string(file), l, cl};
  return true;
}

class Lexer {
 public:
  explicit Lexer(const SourceText& src) : src_(src), s_(src.text()) {}

  Lexed run() {
    Lexed out;
    int end_line = 1, end_col = 1;  // just past the last token or comment
    while (true) {
      skip_space();
      if (pos_ >= s_.size()) break;
      char c = s_[pos_];
      if (c == '#') {
        int line = line_;
        size_t start = ++pos_;
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        col_ += static_cast<int>(pos_ - start) + 1;
        SourceLoc loc;
        if (parse_loc(s_.substr(start, pos_ - start), &loc)) out.locs[line] = loc;
        continue;
      }
      out.tokens.push_back(next());
      end_line = line_;
      end_col = col_;
    }
    Token end;
    end.line = end_line;
    end.col = end_col;
    out.tokens.push_back(end);
    return out;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) {
      if (s_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
      ++pos_;
    }
  }

  // Consumes n characters of the current line.
  std::string take(size_t n) {
    std::string t(s_.substr(pos_, n));
    pos_ += n;
    col_ += static_cast<int>(n);
    return t;
  }

  Token make(Tok kind, std::string text, int line, int col) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line;
    t.col = col;
    return t;
  }

  Token next() {
    int line = line_, col = col_;
    char c = s_[pos_];
    auto at = [&](size_t i) { return pos_ + i < s_.size() ? s_[pos_ + i] : '\0'; };
    if (is_ident_start(c)) {
      size_t n = 1;
      while (is_ident_char(at(n))) ++n;
      return make(Tok::Ident, take(n), line, col);
    }
    if (c == '%') {
      size_t n = 1;
      while (is_value_char(at(n))) ++n;
      if (n == 1) src_.error(line, col, "expected a value name after '%'");
      take(1);
      return make(Tok::ValueName, take(n - 1), line, col);
    }
    if (is_digit(c) || (c == '-' && is_digit(at(1)))) return number(line, col);
    if (c == '-' && s_.substr(pos_ + 1, 3) == "inf" && !is_ident_char(at(4))) {
      return make(Tok::Float, take(4), line, col);
    }
    if (c == '"') return string(line, col);
    if (std::string_view("(){}[]<>,:=@").find(c) != std::string_view::npos) {
      return make(Tok::Punct, take(1), line, col);
    }
    char shown[8];
    std::snprintf(shown, sizeof shown,
                  std::isprint(static_cast<unsigned char>(c)) ? "%c" : "\\x%02x",
                  static_cast<unsigned char>(c));
    src_.error(line, col, std::string("unexpected character '") + shown + "'");
  }

  Token number(int line, int col) {
    auto at = [&](size_t i) { return pos_ + i < s_.size() ? s_[pos_ + i] : '\0'; };
    size_t n = at(0) == '-' ? 1 : 0;
    bool is_float = false;
    while (is_digit(at(n))) ++n;
    if (at(n) == '.') {
      is_float = true;
      ++n;
      while (is_digit(at(n))) ++n;
    }
    if (at(n) == 'e' || at(n) == 'E') {
      size_t m = n + 1;
      if (at(m) == '+' || at(m) == '-') ++m;
      if (is_digit(at(m))) {
        is_float = true;
        n = m;
        while (is_digit(at(n))) ++n;
      }
    }
    if (is_ident_char(at(n))) {
      src_.error(line_, col_ + static_cast<int>(n),
                 "unexpected character '" + std::string(1, at(n)) + "' in number");
    }
    return make(is_float ? Tok::Float : Tok::Int, take(n), line, col);
  }

  Token string(int line, int col) {
    std::string value;
    take(1);
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') {
        src_.error(line, col, "unterminated string (missing closing '\"')");
      }
      char c = s_[pos_];
      if (c == '"') {
        take(1);
        break;
      }
      if (c == '\\') {
        char e = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
        if (e == '"' || e == '\\') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else {
          src_.error(line_, col_, "unknown escape in string (use \\\", \\\\ or \\n)");
        }
        take(2);
        continue;
      }
      value += c;
      take(1);
    }
    return make(Tok::String, std::move(value), line, col);
  }

  const SourceText& src_;
  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

Lexed lex(const SourceText& src) {
  return Lexer(src).run();
}

}  // namespace kiln::ir::text
