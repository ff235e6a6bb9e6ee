#include "util/py_json_writer.h"

#include <cstdio>

#include "util/py_escape.h"
#include "util/py_format.h"

namespace qinfer {

void PyJsonWriter::floating(double v) { out_ += py_json_float(v); }

void PyJsonWriter::string(std::string_view utf8) {
  out_ += '"';
  for (char c : utf8) json_escape_byte(out_, c);
  out_ += '"';
}

void PyJsonWriter::string_ascii(std::u32string_view code_points) {
  out_ += '"';
  char buf[16];
  for (char32_t c : code_points) {
    if (c < 0x7F) {
      json_escape_byte(out_, static_cast<char>(c));
      continue;
    }
    if (c >= 0x10000) {
      const char32_t v = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                    static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    }
    out_ += buf;
  }
  out_ += '"';
}

void PyJsonWriter::open(char bracket) {
  out_ += bracket;
  empty_.push_back(true);
}

void PyJsonWriter::item() {
  if (!empty_.back()) out_ += style_.item_sep;
  empty_.back() = false;
  newline(empty_.size());
}

void PyJsonWriter::close(char bracket) {
  const bool empty = empty_.back();
  empty_.pop_back();
  if (!empty) newline(empty_.size());
  out_ += bracket;
}

void PyJsonWriter::newline(size_t level) {
  if (!style_.indent) return;
  out_ += '\n';
  for (size_t i = 0; i < level; ++i) out_ += *style_.indent;
}

}  // namespace qinfer
