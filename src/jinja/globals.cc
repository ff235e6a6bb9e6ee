// Global functions of the chat-template environment: Jinja's range, dict,
// namespace, cycler, joiner, and Hugging Face's raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja sandbox MAX_RANGE

Value g_range(CallArgs& ca) {
  if (!ca.kw.empty()) throw EvalError("TypeError: range() takes no keyword arguments");
  std::vector<int64_t> a;
  for (auto& v : ca.pos) {
    if (!v.is_int() && !v.is_bool())
      throw EvalError(cat("TypeError: '", type_name(v), "' object cannot be interpreted as an integer"));
    a.push_back(v.as_int());
  }
  if (a.empty() || a.size() > 3) throw EvalError("TypeError: range expected 1 to 3 arguments");
  int64_t start = a.size() == 1 ? 0 : a[0], stop = a.size() == 1 ? a[0] : a[1], step = a.size() == 3 ? a[2] : 1;
  if (step == 0) throw EvalError("ValueError: range() arg 3 must not be zero");
  Json arr = Json::array();
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(arr.size()) >= kMaxRange)
      throw EvalError("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    arr.push_back(i);
  }
  return Value(std::move(arr));
}

Value g_dict(CallArgs& ca) {
  std::vector<std::pair<std::string, Value>> members;
  if (ca.pos.size() > 1) throw EvalError("TypeError: dict expected at most 1 argument");
  if (!ca.pos.empty()) {
    const Value& src = ca.pos[0];
    if (src.is_dict())
      for (auto it = src.json().begin(); it != src.json().end(); ++it) members.emplace_back(it.key(), src.member(it.key()));
    else
      for (auto& pair : iterate(src)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2 || !kv[0].is_string()) throw EvalError("dict(): expected (str, value) pairs");
        members.emplace_back(kv[0].str(), kv[1]);
      }
  }
  members.insert(members.end(), ca.kw.begin(), ca.kw.end());
  return make_dict(members, "dict()");
}

Value g_namespace(CallArgs& ca) {
  auto o = std::make_shared<Object>();
  if (ca.pos.size() > 1) throw EvalError("TypeError: namespace expected at most 1 argument");
  if (!ca.pos.empty()) {
    const Value& src = ca.pos[0];
    if (!src.is_dict()) throw EvalError("TypeError: namespace() argument must be a mapping");
    for (auto it = src.json().begin(); it != src.json().end(); ++it) o->attrs[it.key()] = src.member(it.key());
  }
  for (auto& [k, v] : ca.kw) o->attrs[k] = v;
  return Value::object(o);
}

// cycler(*items): .next() returns the items in turn, .reset() starts over, .current is the next one.
Value g_cycler(CallArgs& ca) {
  if (!ca.kw.empty()) throw EvalError("TypeError: cycler() takes no keyword arguments");
  if (ca.pos.empty()) throw EvalError("RuntimeError: at least one item has to be provided");
  auto o = std::make_shared<Object>();
  o->is_namespace = false;
  auto pos = std::make_shared<size_t>(0);
  std::weak_ptr<Object> self = o;  // the methods live in the object: no ownership cycle
  std::vector<Value> items = ca.pos;
  o->attrs["items"] = make_list(items, "cycler()");
  o->attrs["current"] = items[0];
  o->attrs["next"] = Value::callable("cycler.next", [self, pos, items](CallArgs& a) -> Value {
    if (!a.pos.empty() || !a.kw.empty()) throw EvalError("TypeError: next() takes no arguments");
    Value rv = items[*pos];
    *pos = (*pos + 1) % items.size();
    if (auto obj = self.lock()) obj->attrs["current"] = items[*pos];
    return rv;
  });
  o->attrs["reset"] = Value::callable("cycler.reset", [self, pos, items](CallArgs&) -> Value {
    *pos = 0;
    if (auto obj = self.lock()) obj->attrs["current"] = items[0];
    return Value::none();
  });
  return Value::object(o);
}

// joiner(sep=", "): "" on the first call, sep on every later one.
Value g_joiner(CallArgs& ca) {
  if (ca.pos.size() > 1 || (ca.kw.size() == 1 && ca.kw[0].first != "sep") || ca.kw.size() + ca.pos.size() > 1)
    throw EvalError("TypeError: joiner() takes one argument, sep");
  Value sep = !ca.pos.empty() ? ca.pos[0] : !ca.kw.empty() ? ca.kw[0].second : Value(", ");
  auto used = std::make_shared<bool>(false);
  return Value::callable("joiner", [sep, used](CallArgs&) -> Value {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return sep;
  });
}

Value g_raise_exception(CallArgs& ca) {
  throw RaisedError(ca.pos.empty() ? std::string() : to_str(ca.pos[0]));
}

Value g_strftime_now(CallArgs& ca) {
  if (ca.pos.size() != 1 || !ca.pos[0].is_string()) throw EvalError("strftime_now(format) needs one string");
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[512];
  size_t n = std::strftime(buf, sizeof buf, ca.pos[0].str().c_str(), &tm);
  return Value(std::string(buf, n));
}

}  // namespace

void add_globals(std::vector<std::pair<std::string, Value>>& out) {
  out.emplace_back("range", Value::callable("range", g_range));
  out.emplace_back("dict", Value::callable("dict", g_dict));
  out.emplace_back("namespace", Value::callable("namespace", g_namespace));
  out.emplace_back("cycler", Value::callable("cycler", g_cycler));
  out.emplace_back("joiner", Value::callable("joiner", g_joiner));
  out.emplace_back("raise_exception", Value::callable("raise_exception", g_raise_exception));
  out.emplace_back("strftime_now", Value::callable("strftime_now", g_strftime_now));
}

}  // namespace qinfer::jinja
