#include "jinja/methods.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "jinja/builtins.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

using Fn = std::function<Value(CallArgs&)>;

std::optional<std::string> opt_str(const Args& a, size_t i) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  return a.str(i);
}

std::optional<int64_t> opt_int(const Args& a, size_t i) {
  if (!a.has(i) || a.get(i).is_none()) return std::nullopt;
  return a.integer(i);
}

Value str_list(const std::vector<std::string>& parts) {
  Json arr = Json::array();
  for (const auto& p : parts) arr.push_back(p);
  return Value(std::move(arr));
}

// startswith/endswith: prefix may be a str or a tuple of str.
bool affix(const std::string& s, const Args& a, bool end) {
  std::u32string u = py::decode(s);
  int64_t len = static_cast<int64_t>(u.size());
  int64_t b = opt_int(a, 1).value_or(0), e = opt_int(a, 2).value_or(len);
  if (b < 0) b = std::max<int64_t>(0, b + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  e = std::min(e, len);
  std::vector<std::string> cands;
  const Value& p = a.get(0);
  if (p.is_string()) cands.push_back(p.str());
  else if (p.is_tuple()) {
    for (auto& v : iterate(p)) {
      if (!v.is_string()) throw EvalError("TypeError: tuple for startswith must only contain str");
      cands.push_back(v.str());
    }
  } else {
    throw EvalError(cat("TypeError: ", a.what(), " first arg must be str or a tuple of str, not ", type_name(p)));
  }
  if (b > len) return false;
  std::u32string win = u.substr(static_cast<size_t>(b), static_cast<size_t>(std::max<int64_t>(0, e - b)));
  for (const auto& c : cands) {
    std::u32string cu = py::decode(c);
    if (cu.size() > win.size()) continue;
    if (end ? win.compare(win.size() - cu.size(), cu.size(), cu) == 0 : win.compare(0, cu.size(), cu) == 0)
      return true;
  }
  return false;
}

std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
    if (c == '}') throw EvalError("ValueError: Single '}' encountered in format string");
    if (c != '{') { out += c; continue; }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw EvalError("ValueError: Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      throw EvalError("str.format: format specs and conversions are not supported");
    Value v;
    if (field.empty()) {
      if (auto_idx >= args.pos.size()) throw EvalError("IndexError: Replacement index out of range");
      v = args.pos[auto_idx++];
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      // An index (Python: all digits; any other name is a keyword), Python's error past
      // a Py_ssize_t.
      uint64_t k = 0;
      for (char d : field) {
        if (k > (uint64_t{INT64_MAX} - static_cast<uint64_t>(d - '0')) / 10)
          throw EvalError("ValueError: Too many decimal digits in format string");
        k = k * 10 + static_cast<uint64_t>(d - '0');
      }
      if (k >= args.pos.size()) throw EvalError("IndexError: Replacement index out of range");
      v = args.pos[static_cast<size_t>(k)];
    } else {
      bool found = false;
      for (const auto& [name, val] : args.kw)
        if (name == field) { v = val; found = true; }
      if (!found) throw EvalError("KeyError: " + py::repr(field));
    }
    out += to_str(v);
    i = close;
  }
  return out;
}

Value str_method(const Value& self, const std::string& name) {
  const std::string s = self.str();
  auto m = [&](std::vector<std::string> params, std::function<Value(const Args&)> body) -> Value {
    std::string what = "str." + name + "()";
    return Value::callable(what, [what, params, body](CallArgs& ca) { return body(Args(ca, what, params)); });
  };
  if (name == "startswith" || name == "endswith") {
    bool end = name == "endswith";
    return m({"prefix", "start", "end"}, [s, end](const Args& a) { return Value(affix(s, a, end)); });
  }
  if (name == "split" || name == "rsplit") {
    bool r = name == "rsplit";
    return m({"sep", "maxsplit"}, [s, r](const Args& a) {
      int64_t ms = opt_int(a, 1).value_or(-1);
      return str_list(r ? py::rsplit(s, opt_str(a, 0), ms) : py::split(s, opt_str(a, 0), ms));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool l = name != "rstrip", r = name != "lstrip";
    return m({"chars"}, [s, l, r](const Args& a) { return Value(py::strip(s, opt_str(a, 0), l, r)); });
  }
  if (name == "replace")
    return m({"old", "new", "count"}, [s](const Args& a) {
      return Value(py::replace(s, a.str(0), a.str(1), opt_int(a, 2).value_or(-1)));
    });
  if (name == "upper") return m({}, [s](const Args&) { return Value(py::upper(s)); });
  if (name == "lower") return m({}, [s](const Args&) { return Value(py::lower(s)); });
  if (name == "casefold") return m({}, [s](const Args&) { return Value(py::casefold(s)); });
  if (name == "title") return m({}, [s](const Args&) { return Value(py::title(s)); });
  if (name == "capitalize") return m({}, [s](const Args&) { return Value(py::capitalize(s)); });
  if (name == "swapcase") return m({}, [s](const Args&) { return Value(py::swapcase(s)); });
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    bool rev = name[0] == 'r', raise = name.find("index") != std::string::npos;
    return m({"sub", "start", "end"}, [s, rev, raise](const Args& a) {
      int64_t r = py::find(s, a.str(0), opt_int(a, 1), opt_int(a, 2), rev);
      if (r < 0 && raise) throw EvalError("ValueError: substring not found");
      return Value(r);
    });
  }
  if (name == "count")
    return m({"sub", "start", "end"}, [s](const Args& a) {
      return Value(py::count(s, a.str(0), opt_int(a, 1), opt_int(a, 2)));
    });
  if (name == "join")
    return m({"iterable"}, [s](const Args& a) {
      std::string out;
      bool first = true;
      for (auto& v : iterate(a.get(0))) {
        if (!v.is_string()) throw EvalError(cat("TypeError: sequence item: expected str instance, ", type_name(v), " found"));
        if (!first) out += s;
        first = false;
        out += v.str();
      }
      return Value(std::move(out));
    });
  if (name == "splitlines")
    return m({"keepends"}, [s](const Args& a) { return str_list(py::splitlines(s, a.boolean(0))); });
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "isdecimal" || name == "isnumeric") {
    bool (*pred)(char32_t) = name == "isalpha" ? py::is_alpha_cp : name == "isalnum" ? py::is_alnum_cp
                             : name == "isspace" ? py::is_space : py::is_digit_cp;
    return m({}, [s, pred](const Args&) { return Value(py::all_chars(s, pred)); });
  }
  if (name == "islower") return m({}, [s](const Args&) { return Value(py::is_lower(s)); });
  if (name == "isupper") return m({}, [s](const Args&) { return Value(py::is_upper(s)); });
  if (name == "removeprefix" || name == "removesuffix") {
    bool pre = name == "removeprefix";
    return m({"affix"}, [s, pre](const Args& a) {
      std::string x = a.str(0);
      if (pre && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
      if (!pre && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
        return Value(s.substr(0, s.size() - x.size()));
      return Value(s);
    });
  }
  if (name == "partition" || name == "rpartition") {
    bool r = name == "rpartition";
    return m({"sep"}, [s, r](const Args& a) {
      std::string sep = a.str(0);
      if (sep.empty()) throw EvalError("ValueError: empty separator");
      size_t f = r ? s.rfind(sep) : s.find(sep);
      if (f == std::string::npos) return r ? tuple_of({"", "", s}, "str.partition()") : tuple_of({s, "", ""}, "str.partition()");
      return tuple_of({s.substr(0, f), sep, s.substr(f + sep.size())}, "str.partition()");
    });
  }
  if (name == "zfill")
    return m({"width"}, [s](const Args& a) {
      int64_t w = a.integer(0), len = static_cast<int64_t>(py::length(s));
      if (w <= len) return Value(s);
      check_built_size(w, "str.zfill()");
      std::string pad(static_cast<size_t>(w - len), '0');
      if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value(s.substr(0, 1) + pad + s.substr(1));
      return Value(pad + s);
    });
  if (name == "center" || name == "ljust" || name == "rjust") {
    char kind = name[0];
    return m({"width", "fillchar"}, [s, kind](const Args& a) {
      int64_t w = a.integer(0), len = static_cast<int64_t>(py::length(s));
      std::string fill = a.has(1) ? a.str(1) : " ";
      if (w <= len) return Value(s);
      check_built_size(w, "str.center()/ljust()/rjust()");
      int64_t total = w - len, left = 0;
      if (kind == 'r') left = total;
      else if (kind == 'c') left = total / 2 + (total & w & 1);
      std::string out;
      for (int64_t i = 0; i < left; ++i) out += fill;
      out += s;
      for (int64_t i = left; i < total; ++i) out += fill;
      return Value(out);
    });
  }
  if (name == "format") {
    std::string what = "str.format()";
    return Value::callable(what, [s](CallArgs& ca) { return Value(str_format(s, ca)); });
  }
  return Value();
}

Value unsafe(const Value& self, const std::string& name) {
  std::string t = type_name(self);
  return Value::callable(t + "." + name, [t, name](CallArgs&) -> Value {
    throw EvalError(cat("SecurityError: access to attribute '", name, "' of '", t, "' object is unsafe."));
  });
}

Value dict_method(const Value& self, const std::string& name) {
  auto m = [&](std::vector<std::string> params, std::function<Value(const Args&)> body) -> Value {
    std::string what = "dict." + name + "()";
    return Value::callable(what, [what, params, body](CallArgs& ca) { return body(Args(ca, what, params)); });
  };
  if (name == "get")
    return m({"key", "default"}, [self](const Args& a) {
      if (a.get(0).is_string()) {
        Value v = self.member(a.get(0).str());
        if (!v.is_undefined()) return v;
      }
      return a.has(1) ? a.get(1) : Value::none();
    });
  if (name == "items" || name == "keys" || name == "values") {
    char kind = name[0];
    return m({}, [self, kind](const Args&) {
      if (kind == 'i') return dict_items(self);
      std::vector<Value> out;
      for (auto it = self.json().begin(); it != self.json().end(); ++it)
        out.push_back(kind == 'k' ? Value(it.key()) : self.member(it.key()));
      return make_list(out, "dict.values()");
    });
  }
  if (name == "copy")
    return m({}, [self](const Args&) {
      std::vector<std::pair<std::string, Value>> members;
      for (auto it = self.json().begin(); it != self.json().end(); ++it) members.emplace_back(it.key(), self.member(it.key()));
      return make_dict(members, "dict.copy()");
    });
  if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear")
    return unsafe(self, name);
  return Value();
}

// Methods of a list, and of a tuple (only index and count).
Value list_method(const Value& self, const std::string& name) {
  const bool tuple = self.is_tuple();
  auto m = [&](std::vector<std::string> params, std::function<Value(const Args&)> body) -> Value {
    std::string what = (tuple ? "tuple." : "list.") + name + "()";
    return Value::callable(what, [what, params, body](CallArgs& ca) { return body(Args(ca, what, params)); });
  };
  if (name == "index")
    return m({"value"}, [self, tuple](const Args& a) {
      for (size_t i = 0; i < self.size(); ++i)
        if (equals(self.at(i), a.get(0))) return Value(static_cast<int64_t>(i));
      if (tuple) throw EvalError("ValueError: tuple.index(x): x not in tuple");
      throw EvalError(cat("ValueError: ", repr(a.get(0)), " is not in list"));
    });
  if (name == "count")
    return m({"value"}, [self](const Args& a) {
      int64_t n = 0;
      for (size_t i = 0; i < self.size(); ++i) n += equals(self.at(i), a.get(0));
      return Value(n);
    });
  if (tuple) return Value();
  if (name == "copy") return m({}, [self](const Args&) { return make_list(iterate(self), "list.copy()"); });
  if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
      name == "clear" || name == "sort" || name == "reverse")
    return unsafe(self, name);
  return Value();
}

}  // namespace

Value dict_items(const Value& dict) {
  std::vector<Value> pairs;
  for (auto it = dict.json().begin(); it != dict.json().end(); ++it)
    pairs.push_back(tuple_of({Value(it.key()), dict.member(it.key())}, "dict.items()"));
  return make_list(pairs, "dict.items()");
}

Value bound_method(const Value& self, const std::string& name) {
  if (self.is_iterator()) return Value();
  if (self.is_string()) return str_method(self, name);
  if (self.is_dict()) return dict_method(self, name);
  if (self.is_list()) return list_method(self, name);
  return Value();
}

}  // namespace qinfer::jinja
