// Tokens of the graph IR text form (docs/ir.md) and the diagnostics shared by
// its lexer and parser: "file:line:col: error: MESSAGE", the source line, a caret.
//
// Internal to ir/: only parser.cpp includes this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir::text {

// The source being read, for positions and excerpts.
class SourceText {
 public:
  SourceText(std::string_view text, std::string filename);
  const std::string& filename() const { return filename_; }
  std::string_view text() const { return text_; }
  // Throws kiln::Error "file:line:col: error: MESSAGE\n<line>\n<caret>".
  [[noreturn]] void error(int line, int col, const std::string& message) const;

 private:
  std::string_view text_;
  std::string filename_;
  std::vector<std::string_view> lines_;
};

enum class Tok : uint8_t {
  Ident,      // graph, return, op names, dtype names, dim symbols, true, none, inf ...
  ValueName,  // %x, %0 (text holds the name without '%')
  Int,        // -?[0-9]+
  Float,      // -?[0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)? with '.' or exponent, or -inf
  String,     // "..." (text holds the decoded contents)
  Punct,      // one of ( ) { } [ ] < > , : = @
  End,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 1;
  int col = 1;

  bool is(Tok k, std::string_view t) const { return kind == k && text == t; }
  bool punct(char c) const { return kind == Tok::Punct && text.size() == 1 && text[0] == c; }
  // How messages quote the token: 'foo', '%x', end of input.
  std::string describe() const;
};

struct Lexed {
  std::vector<Token> tokens;  // ends with one End token
  // Location comments ("# file:line:col") by the line they sit on.
  std::map<int, SourceLoc> locs;
};

// Splits the whole text; lexical errors (unterminated string, stray character)
// are thrown through `src`.
Lexed lex(const SourceText& src);

}  // namespace kiln::ir::text
