// Python's json.dumps as a writer, shared by the chat module's Python values
// (chat/py_value.cc: tool-call arguments) and the Jinja engine (jinja/py_json.cc: the
// tojson filter), each walking its own value type and calling this for every spelling:
// scalars (floats as repr, NaN / Infinity), strings (the ensure_ascii=False and =True
// escapes), and the separators, brackets and indentation of lists and dicts.
//
//   std::string out;
//   PyJsonWriter w(out);             // json.dumps defaults: ", " and ": ", one line
//   w.begin_dict();
//   w.item(); w.string("a"); w.key_end(); w.integer("1");
//   w.end_dict();                    // out == "{\"a\": 1}"
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer {

struct PyJsonStyle {
  std::optional<std::string> indent;  // nullopt: one line; else the per-level indent string
  std::string item_sep = ", ";
  std::string key_sep = ": ";
};

class PyJsonWriter {
 public:
  explicit PyJsonWriter(std::string& out, PyJsonStyle style = {}) : out_(out), style_(std::move(style)) {}

  void null() { out_ += "null"; }
  void boolean(bool b) { out_ += b ? "true" : "false"; }
  void integer(std::string_view digits) { out_ += digits; }  // decimal digits, e.g. "-12"
  void floating(double v);                                   // repr; NaN, Infinity, -Infinity
  // A str with ensure_ascii=False: \" \\ \n \r \t \b \f, \u00XX for the other control
  // bytes, every other byte (UTF-8 included) as is.
  void string(std::string_view utf8);
  // A str with ensure_ascii=True, given as code points: ' '..'~' as is (bar the escapes
  // above), everything else \uXXXX, surrogate pairs above U+FFFF.
  void string_ascii(std::u32string_view code_points);

  // Containers: begin, then item() before each element (a list value, or a dict key
  // followed by key_end() and its value), then end. Empty ones come out as [] and {}.
  void begin_list() { open('['); }
  void end_list() { close(']'); }
  void begin_dict() { open('{'); }
  void end_dict() { close('}'); }
  void item();
  void key_end() { out_ += style_.key_sep; }

 private:
  void open(char bracket);
  void close(char bracket);
  void newline(size_t level);

  std::string& out_;
  PyJsonStyle style_;
  std::vector<bool> empty_;  // per open container: no item written yet
};

}  // namespace qinfer
