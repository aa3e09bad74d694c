// Tokenizer for the Python subset Kiln scripts are written in.
//
// Produces Python's token stream: NEWLINE at the end of each logical line,
// INDENT/DEDENT around blocks, no NEWLINE inside brackets or after a `\`
// continuation, comments and blank lines dropped. Lexical errors (stray
// characters, unterminated strings, bad dedents) go to the Diagnostics and the
// lexer keeps going, so the parser can report more than one problem.
#pragma once

#include <string>
#include <vector>

#include "frontend/diagnostics.h"

namespace kiln::frontend {

enum class Tok {
  Name,
  Keyword,
  Int,
  Float,
  String,
  Op,  // operators and delimiters; the spelling is in Token::text
  Newline,
  Indent,
  Dedent,
  End,
};

const char* tok_name(Tok t);

struct Token {
  Tok kind = Tok::End;
  std::string text;  // spelling; for String the decoded value
  int64_t ival = 0;  // Int; for String, 1 when it is an f-string
  double fval = 0;   // Float
  Span span;

  bool is_op(const char* s) const { return kind == Tok::Op && text == s; }
  bool is_kw(const char* s) const { return kind == Tok::Keyword && text == s; }
};

std::vector<Token> tokenize(const SourceFile& file, Diagnostics& diags);

// "Name(x) Op(=) Int(3) Newline ..." for tests and debugging.
std::string tokens_str(const std::vector<Token>& tokens);

}  // namespace kiln::frontend
