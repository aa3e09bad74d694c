// Tokenizer: Python's lexical rules for the subset the frontend accepts
// (names, keywords, int/float literals, string literals with escapes, operators,
// indentation tracking with a stack of column widths, implicit line joining
// inside brackets and explicit `\` continuations).
#include "frontend/lexer.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

namespace kiln::frontend {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::Name:
      return "Name";
    case Tok::Keyword:
      return "Keyword";
    case Tok::Int:
      return "Int";
    case Tok::Float:
      return "Float";
    case Tok::String:
      return "String";
    case Tok::Op:
      return "Op";
    case Tok::Newline:
      return "Newline";
    case Tok::Indent:
      return "Indent";
    case Tok::Dedent:
      return "Dedent";
    case Tok::End:
      return "End";
  }
  return "?";
}

namespace {

const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return k;
}

// Longest first, so "**=" wins over "**" and "*".
const char* const kOps[] = {"**=", "//=", ">>=", "<<=", "...", "->", "+=", "-=", "*=", "/=",
                            "%=",  "@=",  "&=",  "|=",  "^=",  "**", "//", "<<", ">>", "<=",
                            ">=",  "==",  "!=",  ":=",  "+",   "-",  "*",  "/",  "%",  "@",
                            "&",   "|",   "^",   "~",   "<",   ">",  "(",  ")",  "[",  "]",
                            "{",   "}",   ",",   ":",   ".",   ";",  "="};

bool is_ident_start(char c) {
  return std::isalpha(uint8_t(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(uint8_t(c)) || c == '_';
}

class Lexer {
 public:
  Lexer(const SourceFile& file, Diagnostics& diags) : src_(file.text()), diags_(diags) {}

  std::vector<Token> run() {
    indents_.push_back(0);
    alt_indents_.push_back(0);
    while (pos_ < src_.size()) {
      if (at_line_start_ && depth_ == 0) {
        if (!handle_indentation()) continue;
      }
      char c = src_[pos_];
      if (c == '\n') {
        newline();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        advance();
        continue;
      }
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
        continue;
      }
      if (c == '\\' && peek(1) == '\n') {  // explicit line joining
        advance();
        advance();
        continue;
      }
      if (is_ident_start(c)) {
        lex_name();
      } else if (std::isdigit(uint8_t(c)) || (c == '.' && std::isdigit(uint8_t(peek(1))))) {
        lex_number();
      } else if (c == '"' || c == '\'') {
        lex_string(pos_);
      } else {
        lex_op();
      }
    }
    if (!open_.empty()) {
      const Open& o = open_.front();
      diags_.error({o.line, o.col, o.line, o.col + 1},
                   std::string("'") + o.bracket + "' was never closed");
    }
    if (!tokens_.empty() && tokens_.back().kind != Tok::Newline &&
        tokens_.back().kind != Tok::Dedent) {
      push(Tok::Newline, "", here(), here());
    }
    while (indents_.size() > 1) {
      indents_.pop_back();
      alt_indents_.pop_back();
      push(Tok::Dedent, "", here(), here());
    }
    push(Tok::End, "", here(), here());
    return std::move(tokens_);
  }

 private:
  struct Pos {
    int line, col;
  };
  Pos here() const { return {line_, col_}; }
  char peek(size_t k) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  Token& push(Tok kind, std::string text, Pos b, Pos e) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.span = {b.line, b.col, e.line, e.col};
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  void newline() {
    if (depth_ == 0 && !tokens_.empty() && tokens_.back().kind != Tok::Newline &&
        tokens_.back().kind != Tok::Indent && tokens_.back().kind != Tok::Dedent) {
      Pos b = here();
      push(Tok::Newline, "", b, {b.line, b.col + 1});
    }
    advance();
    // Inside brackets the next line continues this one: no indentation.
    at_line_start_ = depth_ == 0;
  }

  // Measures the indentation of a new logical line and emits INDENT/DEDENTs.
  // Returns false when the line is blank or a comment (nothing to emit).
  // Like CPython, the width is measured twice: with tabs to multiples of 8
  // (`width`) and with a tab as one column (`alt`); a line whose comparison
  // with the enclosing block differs between the two is a TabError. A form
  // feed resets both, as in CPython.
  bool handle_indentation() {
    int width = 0, alt = 0;
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\f')) {
      if (src_[pos_] == '\t') {
        width = (width / 8 + 1) * 8;
        ++alt;
      } else if (src_[pos_] == ' ') {
        ++width;
        ++alt;
      } else {
        width = alt = 0;
      }
      advance();
    }
    if (pos_ >= src_.size()) return false;
    char c = src_[pos_];
    if (c == '\n' || c == '#' || (c == '\r' && peek(1) == '\n')) {
      // Blank or comment-only lines do not count for indentation.
      while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      if (pos_ < src_.size()) advance();
      return false;
    }
    at_line_start_ = false;
    Pos p = here();
    if (width > indents_.back()) {
      if (alt <= alt_indents_.back()) tab_error(p);
      indents_.push_back(width);
      alt_indents_.push_back(alt);
      push(Tok::Indent, "", p, p);
    } else {
      int popped = 0, alt_popped = 0;
      while (width < indents_.back()) {
        popped = indents_.back();
        alt_popped = alt_indents_.back();
        indents_.pop_back();
        alt_indents_.pop_back();
        push(Tok::Dedent, "", p, p);
      }
      if (width != indents_.back()) {
        diags_.error({p.line, p.col, p.line, p.col},
                     "unindent does not match any outer indentation level");
        // Keep the line in the innermost block it was dedented out of, so the
        // lines after it (usually at that block's level) parse normally.
        indents_.push_back(popped);
        alt_indents_.push_back(alt_popped);
        tokens_.pop_back();
      } else if (alt != alt_indents_.back()) {
        tab_error(p);
      }
    }
    return true;
  }

  void tab_error(Pos p) {
    diags_.error({p.line, p.col, p.line, p.col},
                 "TabError: inconsistent use of tabs and spaces in indentation");
  }

  void lex_name() {
    Pos b = here();
    size_t start = pos_;
    while (pos_ < src_.size() && is_ident_char(src_[pos_])) advance();
    std::string word = src_.substr(start, pos_ - start);
    // String prefixes: r'..', b'..', f'..' (f-strings are rejected when lowered).
    if (pos_ < src_.size() && (src_[pos_] == '\'' || src_[pos_] == '"') && word.size() <= 2) {
      bool prefix = true;
      for (char c : word) prefix = prefix && std::string("rRbBuUfF").find(c) != std::string::npos;
      if (prefix) {
        lex_string(start, word);
        return;
      }
    }
    push(keywords().count(word) ? Tok::Keyword : Tok::Name, word, b, here());
  }

  void lex_number() {
    Pos b = here();
    size_t start = pos_;
    bool is_float = false;
    if (src_[pos_] == '0' && (peek(1) == 'x' || peek(1) == 'X' || peek(1) == 'b' ||
                              peek(1) == 'B' || peek(1) == 'o' || peek(1) == 'O')) {
      int base = (peek(1) == 'x' || peek(1) == 'X')   ? 16
                 : (peek(1) == 'b' || peek(1) == 'B') ? 2
                                                      : 8;
      advance();
      advance();
      std::string digits;
      while (pos_ < src_.size() && (std::isxdigit(uint8_t(src_[pos_])) || src_[pos_] == '_')) {
        if (src_[pos_] != '_') digits += src_[pos_];
        advance();
      }
      Token& t = push(Tok::Int, src_.substr(start, pos_ - start), b, here());
      errno = 0;
      unsigned long long u = std::strtoull(digits.c_str(), nullptr, base);
      size_t valid = digits.find_first_not_of(base == 16  ? "0123456789abcdefABCDEF"
                                              : base == 8 ? "01234567"
                                                          : "01");
      if (digits.empty() || valid != std::string::npos) {
        diags_.error(t.span, "invalid integer literal");
      } else if (errno == ERANGE || u > uint64_t(std::numeric_limits<int64_t>::max())) {
        // Script ints are int64: 0x8000000000000000 must not wrap to -2**63.
        diags_.error(t.span, "integer literal '" + t.text + "' is too large (more than 2**63-1)");
      } else {
        t.ival = int64_t(u);
      }
      return;
    }
    auto digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(uint8_t(src_[pos_])) || src_[pos_] == '_')) {
        advance();
      }
    };
    digits();
    if (pos_ < src_.size() && src_[pos_] == '.') {
      is_float = true;
      advance();
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E') &&
        (std::isdigit(uint8_t(peek(1))) ||
         ((peek(1) == '+' || peek(1) == '-') && std::isdigit(uint8_t(peek(2)))))) {
      is_float = true;
      advance();
      if (src_[pos_] == '+' || src_[pos_] == '-') advance();
      digits();
    }
    std::string text = src_.substr(start, pos_ - start);
    std::string clean;
    for (char c : text) {
      if (c != '_') clean += c;
    }
    if (pos_ < src_.size() && is_ident_char(src_[pos_])) {
      // "3x", "1.5f": a number glued to a name is a typo, not two tokens.
      while (pos_ < src_.size() && is_ident_char(src_[pos_])) advance();
      Token& t = push(Tok::Int, src_.substr(start, pos_ - start), b, here());
      diags_.error(t.span, "invalid number literal '" + t.text + "'");
      return;
    }
    Token& t = push(is_float ? Tok::Float : Tok::Int, text, b, here());
    if (is_float) {
      t.fval = std::strtod(clean.c_str(), nullptr);
    } else {
      errno = 0;
      t.ival = std::strtoll(clean.c_str(), nullptr, 10);
      if (errno == ERANGE) {
        diags_.error(t.span, "integer literal '" + text + "' is too large (more than 2**63-1)");
      }
    }
  }

  void lex_string(size_t start, const std::string& prefix = {}) {
    Pos b{line_, col_ - int(pos_ - start)};
    if (prefix.empty()) b = here();
    bool raw = prefix.find_first_of("rR") != std::string::npos;
    bool fstring = prefix.find_first_of("fF") != std::string::npos;
    char q = src_[pos_];
    bool triple = peek(1) == q && peek(2) == q;
    advance();
    if (triple) {
      advance();
      advance();
    }
    std::string value;
    bool closed = false;
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (!triple && c == '\n') break;
      if (c == q && (!triple || (peek(1) == q && peek(2) == q))) {
        advance();
        if (triple) {
          advance();
          advance();
        }
        closed = true;
        break;
      }
      if (c == '\\' && !raw && pos_ + 1 < src_.size()) {
        advance();
        char e = src_[pos_];
        switch (e) {
          case 'n':
            value += '\n';
            break;
          case 't':
            value += '\t';
            break;
          case 'r':
            value += '\r';
            break;
          case '0':
            value += '\0';
            break;
          case '\n':
            break;
          default:
            value += e;
            break;
        }
        advance();
        continue;
      }
      value += c;
      advance();
    }
    Token& t = push(Tok::String, value, b, here());
    if (!closed) diags_.error({b.line, b.col, b.line, b.col + 1}, "unterminated string literal");
    if (fstring) t.ival = 1;  // the parser makes it an Unsupported node
  }

  void lex_op() {
    Pos b = here();
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (src_.compare(pos_, n, op) == 0) {
        for (size_t i = 0; i < n; ++i) advance();
        std::string s(op);
        if (s == "(" || s == "[" || s == "{") {
          ++depth_;
          open_.push_back({b.line, b.col, s[0]});
        }
        if ((s == ")" || s == "]" || s == "}") && depth_ > 0) {
          --depth_;
          open_.pop_back();
        }
        push(Tok::Op, s, b, here());
        return;
      }
    }
    char c = src_[pos_];
    advance();
    std::string shown = std::isprint(uint8_t(c)) ? std::string(1, c) : "\\x" + hex(uint8_t(c));
    diags_.error({b.line, b.col, b.line, b.col + 1}, "invalid character '" + shown + "' in script");
  }

  static std::string hex(uint8_t v) {
    const char* d = "0123456789abcdef";
    return {d[v >> 4], d[v & 15]};
  }

  const std::string& src_;
  Diagnostics& diags_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  int depth_ = 0;  // bracket nesting: newlines inside brackets are not tokens
  struct Open {
    int line, col;
    char bracket;
  };
  std::vector<Open> open_;
  bool at_line_start_ = true;
  std::vector<int> indents_;
  std::vector<int> alt_indents_;  // the same widths with a tab as one column
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const SourceFile& file, Diagnostics& diags) {
  return Lexer(file, diags).run();
}

std::string tokens_str(const std::vector<Token>& tokens) {
  std::ostringstream os;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (i) os << ' ';
    os << tok_name(t.kind);
    switch (t.kind) {
      case Tok::Name:
      case Tok::Keyword:
      case Tok::Op:
      case Tok::Int:
      case Tok::Float:
        os << '(' << t.text << ')';
        break;
      case Tok::String:
        os << "('" << t.text << "')";
        break;
      default:
        break;
    }
  }
  return os.str();
}

}  // namespace kiln::frontend
