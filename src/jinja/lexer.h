// Template lexer with Jinja2's default delimiters and Hugging Face's settings:
// trim_blocks (drop the first newline after a block/comment tag),
// lstrip_blocks (drop spaces/tabs before a block/comment tag on its own line),
// '-' / '+' whitespace control, comments, {% raw %}, newline normalisation
// and removal of one trailing newline (keep_trailing_newline = False).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::jinja {

enum class Tok { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Op, Eof };

struct Token {
  Tok type;
  std::string text;  // Data / Name / String (unescaped) / Op
  int line = 0;
  int64_t ival = 0;
  uint64_t uval = 0;  // Integer past INT64_MAX (then ival is 0 and uval != 0)
  double fval = 0;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError (Kind::Syntax) naming `template_name` and the line.
std::vector<Token> tokenize(const std::string& source, const std::string& template_name,
                            const LexOptions& opt = {});

std::string describe(const Token& t);  // for error messages: "'endfor'", "end of statement block"

}  // namespace qinfer::jinja
