// Value: what template expressions evaluate to. Mostly JSON data (held by a
// shared, immutable nlohmann::ordered_json tree; sub-values point into it
// without copying), plus the few non-JSON things Jinja has: Undefined,
// objects with attributes (namespace(), loop) and callables (macros, globals,
// bound str/dict methods). Tuples are JSON arrays marked as tuples in a side
// set shared by the Values into that tree (JSON itself has only arrays); they
// print, compare and concatenate as Python tuples. Operations follow Python 3 / Jinja2 semantics
// (truthiness, str(), ==, <, in, +, len, iteration, getattr/getitem).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

namespace qinfer::jinja {

using Json = nlohmann::ordered_json;
class Value;
// The arrays of one tree that are Python tuples.
using TupleMarks = std::unordered_set<const Json*>;

struct Callable;

// Attribute holder: namespace() objects (assignable with `set ns.x = ...`), loop objects,
// cycler() and joiner(). `call` makes the object itself callable (loop(...) in a recursive loop).
struct Object {
  bool is_namespace = true;
  std::map<std::string, Value> attrs;
  std::shared_ptr<Callable> call;
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { Undefined, Json, Object, Callable };

  Value() = default;  // Undefined
  Value(Json j);      // NOLINT(google-explicit-constructor): owns a new tree
  Value(const char* s) : Value(Json(s)) {}
  Value(std::string s) : Value(Json(std::move(s))) {}
  Value(bool b) : Value(Json(b)) {}
  Value(int64_t i) : Value(Json(i)) {}
  Value(int i) : Value(Json(static_cast<int64_t>(i))) {}
  Value(double d) : Value(Json(d)) {}
  static Value none() { return Value(Json(nullptr)); }
  static Value undefined(std::string hint) { Value v; v.hint_ = std::move(hint); return v; }
  // A value that points into a tree owned by `holder` (no copy).
  static Value borrow(std::shared_ptr<const Json> holder, const Json* node);
  static Value object(std::shared_ptr<Object> o);
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_json() const { return kind_ == Kind::Json; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  const Json& json() const { return *node_; }  // only when is_json()
  bool is_none() const { return is_json() && node_->is_null(); }
  bool is_string() const { return is_json() && node_->is_string(); }
  bool is_bool() const { return is_json() && node_->is_boolean(); }
  bool is_int() const { return is_json() && (node_->is_number_integer()); }
  bool is_float() const { return is_json() && node_->is_number_float(); }
  bool is_number() const { return is_json() && (node_->is_number() || node_->is_boolean()); }
  bool is_list() const { return is_json() && node_->is_array(); }  // a list or a tuple
  bool is_tuple() const { return is_list() && tuples_ && tuples_->count(node_) > 0; }
  bool is_dict() const { return is_json() && node_->is_object(); }
  const std::string& str() const { return node_->get_ref<const std::string&>(); }
  int64_t as_int() const;    // bool/int/float -> int (Python int())
  double as_double() const;  // bool/int/float -> double
  const std::shared_ptr<Object>& obj() const { return obj_; }
  const std::shared_ptr<Callable>& fn() const { return fn_; }
  const std::string& undefined_hint() const { return hint_; }
  const TupleMarks* tuple_marks() const { return tuples_.get(); }  // null when the tree has no tuple

  // Produced by a Python generator (map, select, ...): always truthy, no len().
  bool is_iterator() const { return iterator_; }
  Value as_iterator() const { Value v = *this; v.iterator_ = true; return v; }
  Value as_list() const { Value v = *this; v.iterator_ = false; return v; }

  // Element i of a list or tuple / member of a dict, sharing the tree.
  Value at(size_t i) const;
  Value member(const std::string& key) const;  // Undefined when absent
  size_t size() const;                          // list/tuple/dict only

  // Deep copy of JSON data; non-JSON values throw EvalError naming `what`.
  Json to_json(const char* what) const;

 private:
  // Owns `tree`, whose i-th element (array) or member value (object) is a copy of sources[i]:
  // the tuples inside the sources stay tuples; the root is one when `tuple`.
  static Value adopt(Json tree, const std::vector<const Value*>& sources, bool tuple);
  friend Value make_list(const std::vector<Value>& items, const char* what, bool tuple);
  friend Value make_dict(const std::vector<std::pair<std::string, Value>>& items, const char* what);

  Kind kind_ = Kind::Undefined;
  bool iterator_ = false;
  std::shared_ptr<const Json> holder_;
  const Json* node_ = nullptr;
  std::shared_ptr<Object> obj_;
  std::shared_ptr<Callable> fn_;
  std::string hint_;
  std::shared_ptr<const TupleMarks> tuples_;  // null when the tree holds no tuple
};

// u as int64_t; OverflowError (EvalError) past INT64_MAX, never a wrapped value.
int64_t checked_int64(uint64_t u);
// Python's int() of a float, within the 64-bit integers: truncates toward zero;
// NaN, infinities and values past int64 are refused (EvalError), never wrapped.
int64_t checked_int64(double d);
// Python type name, for error messages ("str", "int", "NoneType", "dict", ...).
std::string type_name(const Value& v);  // "tuple" for a tuple
bool truthy(const Value& v);
std::string to_str(const Value& v);   // Python str(); Undefined -> ""
std::string repr(const Value& v);     // Python repr()
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b, const char* op);  // throws EvalError on mismatch
bool contains(const Value& container, const Value& item);  // `item in container`
int64_t length(const Value& v);                            // Python len()
std::vector<Value> iterate(const Value& v);                 // Python iter(), materialised
// A new list (a tuple when `tuple`) / dict of copies of `items`; tuples inside stay tuples.
// Undefined list items become None; a dict keeps a repeated key's first place and last value.
Value make_list(const std::vector<Value>& items, const char* what, bool tuple = false);
inline Value tuple_of(const std::vector<Value>& items, const char* what) { return make_list(items, what, true); }
Value make_dict(const std::vector<std::pair<std::string, Value>>& items, const char* what);
// Undefined used in a way that needs a value: throws the UndefinedError message.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace qinfer::jinja
