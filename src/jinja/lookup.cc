// Attribute, item and slice lookup with the rules of Jinja's sandboxed
// environment: obj.name tries the Python attribute (a method) first and then
// obj["name"]; obj[key] tries the item first and then the attribute; a miss
// yields Undefined, except on Undefined itself, which throws.
#include "jinja/builtins.h"
#include "jinja/methods.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

std::string owner_name(const Value& v) {
  if (v.is_object()) return v.obj()->is_namespace ? "Namespace" : "LoopContext";
  std::string t = type_name(v);
  return t == "NoneType" ? "None" : t + " object";
}

Value missing(const Value& obj, const std::string& name) {
  return Value::undefined(cat("'", owner_name(obj), "' has no attribute '", name, "'"));
}

bool index_of(const Value& key, int64_t len, int64_t& idx) {
  if (!key.is_int() && !key.is_bool()) return false;
  idx = key.as_int();
  if (idx < 0) idx += len;
  return idx >= 0 && idx < len;
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!name.empty() && name[0] == '_') return missing(obj, name);  // sandbox: no private attributes
  if (obj.is_object()) {
    auto it = obj.obj()->attrs.find(name);
    if (it != obj.obj()->attrs.end()) return it->second;
    return missing(obj, name);
  }
  if (!obj.is_json()) return missing(obj, name);
  Value m = bound_method(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.is_dict()) {
    Value v = obj.member(name);
    if (!v.is_undefined()) return v;
  }
  return missing(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_json() && !obj.is_iterator()) {
    const Json& j = obj.json();
    int64_t idx;
    if (j.is_array()) {
      if (index_of(key, static_cast<int64_t>(j.size()), idx)) return obj.at(static_cast<size_t>(idx));
      if (key.is_int() || key.is_bool()) return Value::undefined(cat(type_name(obj), " object has no element ", key.as_int()));
    } else if (j.is_object()) {
      if (key.is_string()) {
        Value v = obj.member(key.str());
        if (!v.is_undefined()) return v;
      }
    } else if (j.is_string()) {
      std::u32string u = py::decode(j.get_ref<const std::string&>());
      if (index_of(key, static_cast<int64_t>(u.size()), idx)) return Value(py::encode(u[static_cast<size_t>(idx)]));
      if (key.is_int() || key.is_bool()) return Value::undefined(cat("str object has no element ", key.as_int()));
    }
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(cat("'", owner_name(obj), "' has no element ", repr(key)));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto ok = [](const Value& v) { return v.is_none() || v.is_int() || v.is_bool(); };
  if (!obj.is_json() || obj.is_iterator() || !(obj.is_list() || obj.is_string()) || !ok(start) ||
      !ok(stop) || !ok(step))
    return Value::undefined(cat("'", owner_name(obj), "' cannot be sliced with these indices"));
  int64_t st = step.is_none() ? 1 : step.as_int();
  if (st == 0) throw EvalError("ValueError: slice step cannot be zero");
  std::u32string u;
  int64_t len;
  if (obj.is_string()) {
    u = py::decode(obj.str());
    len = static_cast<int64_t>(u.size());
  } else {
    len = static_cast<int64_t>(obj.size());
  }
  int64_t b, e;
  auto adjust = [&](const Value& v, int64_t def, int64_t lo, int64_t hi) {
    if (v.is_none()) return def;
    int64_t x = v.as_int();
    if (x < 0) x += len;
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
  };
  if (st > 0) {
    b = adjust(start, 0, 0, len);
    e = adjust(stop, len, 0, len);
  } else {
    b = adjust(start, len - 1, -1, len - 1);
    e = adjust(stop, -1, -1, len - 1);
  }
  std::vector<int64_t> idx;
  if (st > 0) for (int64_t i = b; i < e; i += st) idx.push_back(i);
  else for (int64_t i = b; i > e; i += st) idx.push_back(i);
  if (obj.is_string()) {
    std::u32string r;
    for (int64_t i : idx) r.push_back(u[static_cast<size_t>(i)]);
    return Value(py::encode(r));
  }
  std::vector<Value> items;
  for (int64_t i : idx) items.push_back(obj.at(static_cast<size_t>(i)));
  return make_list(items, "slice", obj.is_tuple());  // a slice of a tuple is a tuple
}

}  // namespace qinfer::jinja
