// PyValue: the Python values a tool-call argument can become in vLLM's qwen3_coder parser
// (str, int, float, bool, None, list/tuple, dict, or something json.dumps rejects), with
// Python's json.loads / ast.literal_eval / int() / float() readers and json.dumps(...,
// ensure_ascii=False) writer, so argument JSON comes out byte for byte as vLLM writes it.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qinfer::chat {

struct PyValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kList, kTuple, kDict, kUnserializable };
  Kind kind = Kind::kNone;
  bool b = false;
  double f = 0.0;
  std::string s;                                     // kStr text; kInt decimal digits ("-12")
  std::vector<PyValue> items;                        // kList / kTuple
  struct Entry;                                      // a dict item: first = key, second = value
  std::vector<Entry> entries;                        // kDict, insertion order

  static PyValue none();
  static PyValue boolean(bool v);
  static PyValue integer(std::string digits);  // canonical decimal, e.g. "0", "-15"
  static PyValue floating(double v);
  static PyValue str(std::string v);
  static PyValue unserializable();  // set, bytes, complex, Ellipsis

  // dict[key] = value: an existing equal key keeps its position and takes the new value.
  void dict_set(PyValue key, PyValue value);
};

// Not std::pair: pair<PyValue, PyValue> inside PyValue needs PyValue complete (clang + libstdc++).
struct PyValue::Entry {
  PyValue first;
  PyValue second;
};
inline PyValue PyValue::none() { return {}; }

// Python's == for the hashable scalars used as dict keys (1 == 1.0 == True).
bool py_key_equal(const PyValue& a, const PyValue& b);

// json.dumps(v, ensure_ascii=False): ", " and ": " separators, floats as repr, NaN/Infinity.
// Throws JsonDumpError where Python raises TypeError (sets, bytes, tuple keys, ...).
struct JsonDumpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
std::string py_json_dumps(const PyValue& v);
void py_json_dump_string(std::string& out, std::string_view s);

// The decimal digits of int(v) for a finite double v.
std::string py_int_of_double(double v);

// int(s) (base 10): surrounding whitespace, a sign, '_' between digits. nullopt on ValueError.
std::optional<PyValue> py_int(std::string_view s);
// float(s): also "inf", "infinity", "nan" in any case, '_' between digits.
std::optional<double> py_float(std::string_view s);

// json.loads(s); nullopt on JSONDecodeError.
std::optional<PyValue> py_json_loads(std::string_view s);
// ast.literal_eval(s); nullopt on ValueError / SyntaxError / TypeError.
std::optional<PyValue> py_literal_eval(std::string_view s);

}  // namespace qinfer::chat
