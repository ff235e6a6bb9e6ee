// util/py_json_writer: json.dumps's spellings and layout, the one writer the chat module
// (PyValue) and the Jinja engine (tojson) share. Expected strings are CPython 3.11's.
#include "util/py_json_writer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace qinfer {
namespace {

TEST(PyJsonWriter, DefaultSeparatorsOnOneLine) {
  // json.dumps({"a": [1, 2.0, None, True], "b": {}, "c": []}, ensure_ascii=False)
  std::string out;
  PyJsonWriter w(out);
  w.begin_dict();
  w.item(); w.string("a"); w.key_end();
  w.begin_list();
  w.item(); w.integer("1");
  w.item(); w.floating(2.0);
  w.item(); w.null();
  w.item(); w.boolean(true);
  w.end_list();
  w.item(); w.string("b"); w.key_end(); w.begin_dict(); w.end_dict();
  w.item(); w.string("c"); w.key_end(); w.begin_list(); w.end_list();
  w.end_dict();
  EXPECT_EQ(out, R"({"a": [1, 2.0, null, true], "b": {}, "c": []})");
}

TEST(PyJsonWriter, IndentNestsAndLeavesEmptyContainersShut) {
  // json.dumps({"a": [1, []], "b": "x"}, indent=2)
  std::string out;
  PyJsonWriter w(out, PyJsonStyle{std::string("  "), ",", ": "});
  w.begin_dict();
  w.item(); w.string("a"); w.key_end();
  w.begin_list();
  w.item(); w.integer("1");
  w.item(); w.begin_list(); w.end_list();
  w.end_list();
  w.item(); w.string("b"); w.key_end(); w.string("x");
  w.end_dict();
  EXPECT_EQ(out, "{\n  \"a\": [\n    1,\n    []\n  ],\n  \"b\": \"x\"\n}");
}

TEST(PyJsonWriter, StringsAndNonFiniteFloats) {
  std::string out;
  PyJsonWriter w(out);
  w.string("q\"\n\x01\x7f\xc3\xa9");  // ensure_ascii=False: DEL and UTF-8 as they are
  out += ' ';
  w.string_ascii(U"\x7f\u00e9\U0001F600");  // ensure_ascii=True
  out += ' ';
  w.floating(std::nan(""));
  out += ' ';
  w.floating(-HUGE_VAL);
  EXPECT_EQ(out, "\"q\\\"\\n\\u0001\x7f\xc3\xa9\" \"\\u007f\\u00e9\\ud83d\\ude00\" NaN -Infinity");
}

}  // namespace
}  // namespace qinfer
