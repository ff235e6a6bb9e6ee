// Built-in filters (Jinja 3.1 behaviour) plus Hugging Face's `tojson`.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/renderer.h"
#include "jinja/methods.h"
#include "jinja/py_json.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

using FilterFn = Value (*)(Renderer&, const Value&, const CallArgs&);

// make_attrgetter: "a.b.0" -> getitem chain; integer parts index lists.
Value get_path(const Value& item, const Value& attribute) {
  if (attribute.is_none() || attribute.is_undefined()) return item;
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  for (const auto& part : py::split(attribute.str(), std::string("."), -1)) {
    // All digits and within int64: an index; anything else (an index past int64 is no
    // index of any list) is looked up as a key.
    int64_t index = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
    const bool digits = !part.empty() && part[0] != '-' && ec == std::errc() && end == part.data() + part.size();
    cur = digits ? get_item(cur, Value(index)) : get_item(cur, Value(part));
  }
  return cur;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py::lower(v.str())) : v; }

std::string soft_str(const Value& v) { return v.is_string() ? v.str() : to_str(v); }

Value str_list(std::vector<Value> items) { return make_list(items, "filter result"); }

Value f_abs(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "abs()", {});
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.as_int();
    if (i == INT64_MIN) throw EvalError("OverflowError: abs(-2**63) does not fit in 64 bits");
    return Value(i < 0 ? -i : i);
  }
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  throw EvalError(cat("TypeError: bad operand type for abs(): '", type_name(v), "'"));
}

Value f_attr(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "attr()", {"name"});
  std::string name = a.str(0);
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_object()) {
    auto it = v.obj()->attrs.find(name);
    if (it != v.obj()->attrs.end()) return it->second;
  } else if (v.is_json() && (name.empty() || name[0] != '_')) {
    Value m = bound_method(v, name);
    if (!m.is_undefined()) return m;
  }
  return Value::undefined(cat("'", type_name(v), " object' has no attribute '", name, "'"));
}

Value f_batch(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "batch()", {"linecount", "fill_with"});
  int64_t n = a.integer(0);
  if (n <= 0) throw EvalError("ValueError: batch size must be positive");
  std::vector<Value> rows, tmp;
  for (auto& it : iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) { rows.push_back(str_list(tmp)); tmp.clear(); }
    tmp.push_back(it);
  }
  if (!tmp.empty()) {
    if (a.has(1) && !a.get(1).is_none())
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(a.get(1));
    rows.push_back(str_list(tmp));
  }
  return str_list(rows).as_iterator();
}

Value f_capitalize(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "capitalize()", {});
  return Value(py::capitalize(soft_str(v)));
}

Value f_center(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "center()", {"width"});
  CallArgs inner;
  inner.pos.push_back(a.has(0) ? a.get(0) : Value(80));
  return bound_method(Value(soft_str(v)), "center").fn()->fn(inner);
}

Value f_length(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "length()", {});
  return Value(length(v));
}

Value f_default(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "default()", {"default_value", "boolean"});
  if (v.is_undefined() || (a.boolean(1) && !truthy(v))) return a.has(0) ? a.get(0) : Value("");
  return v;
}

Value f_dictsort(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "dictsort()", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) throw EvalError(cat("TypeError: dictsort() needs a mapping, not ", type_name(v)));
  std::string by = a.has(1) ? a.str(1) : "key";
  if (by != "key" && by != "value") throw EvalError("You can only sort by either \"key\" or \"value\"");
  bool cs = a.boolean(0), rev = a.boolean(2);
  std::vector<std::pair<Value, Value>> items;
  for (auto it = v.json().begin(); it != v.json().end(); ++it)
    items.emplace_back(Value(it.key()), v.member(it.key()));
  auto key = [&](const std::pair<Value, Value>& p) { Value k = by == "key" ? p.first : p.second; return cs ? k : ignore_case(k); };
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    return rev ? less(key(y), key(x), "<") : less(key(x), key(y), "<");
  });
  std::vector<Value> pairs;
  for (auto& [k, val] : items) pairs.push_back(tuple_of({k, val}, "dictsort()"));
  return make_list(pairs, "dictsort()");
}

Value f_escape(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "escape()", {});
  std::string s = soft_str(v), out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_first(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "first()", {});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "last()", {});
  if (v.is_iterator()) throw EvalError("TypeError: 'generator' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

bool parse_float(const Value& v, double& out) {
  if (v.is_number()) { out = v.as_double(); return true; }
  if (!v.is_string()) return false;
  std::string s = py::strip(v.str(), std::nullopt, true, true), t;
  for (char c : s) if (c != '_') t += c;
  if (t.empty()) return false;
  std::string low = py::lower(t);
  std::string body = (low[0] == '+' || low[0] == '-') ? low.substr(1) : low;
  if (body == "inf" || body == "infinity" || body == "nan") {
    out = body == "nan" ? NAN : (low[0] == '-' ? -INFINITY : INFINITY);
    return true;
  }
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end && *end == 0;
}

Value f_float(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "float()", {"default"});
  double d;
  if (parse_float(v, d)) return Value(d);
  return a.has(0) ? a.get(0) : Value(0.0);
}

Value f_int(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "int()", {"default", "base"});
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float() && std::isfinite(v.as_double())) return Value(checked_int64(v.as_double()));
  if (v.is_string()) {
    int64_t base = a.has(1) ? a.integer(1) : 10;
    std::string s = py::strip(v.str(), std::nullopt, true, true), t;
    for (char c : s) if (c != '_') t += c;
    std::string digits = t;
    bool neg = false;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) { neg = digits[0] == '-'; digits.erase(0, 1); }
    if ((base == 16 || base == 8 || base == 2 || base == 0) && digits.size() > 2 && digits[0] == '0') {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[1])));
      int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (pb && (base == 0 || base == pb)) { base = pb; digits.erase(0, 2); }
    }
    if (base == 0) base = 10;
    if (!digits.empty() && digits.find_first_of("+- ") == std::string::npos) {
      errno = 0;
      char* end = nullptr;
      long long r = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
      if (end && *end == 0 && errno == 0) return Value(static_cast<int64_t>(neg ? -r : r));
    }
    double d;
    if (parse_float(v, d) && std::isfinite(d)) return Value(checked_int64(d));
  }
  return a.has(0) ? a.get(0) : Value(0);
}

Value f_format(Renderer&, const Value& v, const CallArgs& ca) {
  if (!ca.pos.empty() && !ca.kw.empty())
    throw EvalError("can't handle positional and keyword arguments at the same time");
  if (!ca.kw.empty()) {
    return Value(percent_format(soft_str(v), make_dict(ca.kw, "format()")));
  }
  return Value(percent_format(soft_str(v), tuple_of(ca.pos, "format()")));
}

Value f_indent(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "indent()", {"width", "first", "blank"});
  std::string ind = " ";
  if (a.has(0) && a.get(0).is_string()) {
    ind = a.str(0);
  } else {   // Python: ' ' * width, empty for a negative width
    const int64_t w = std::max<int64_t>(0, a.has(0) ? a.integer(0) : 4);
    check_built_size(w, "indent()");
    ind = std::string(static_cast<size_t>(w), ' ');
  }
  std::string s = soft_str(v) + "\n";
  std::vector<std::string> lines = py::splitlines(s, false);
  std::string rv;
  if (a.boolean(2)) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (a.boolean(1)) rv = ind + rv;
  return Value(std::move(rv));
}

Value f_items(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "items()", {});
  if (v.is_undefined()) return Value(Json::array()).as_iterator();
  if (!v.is_dict()) throw EvalError("TypeError: Can only get item pairs from a mapping.");
  return dict_items(v).as_iterator();
}

Value f_join(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "join()", {"d", "attribute"});
  std::string d = a.has(0) ? soft_str(a.get(0)) : "";
  std::string out;
  bool first = true;
  for (auto& it : iterate(v)) {
    if (!first) out += d;
    first = false;
    Value x = a.has(1) ? get_path(it, a.get(1)) : it;
    out += soft_str(x);
  }
  return Value(std::move(out));
}

Value f_list(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "list()", {});
  if (v.is_list() && !v.is_tuple()) return v.as_list();
  return str_list(iterate(v));
}

Value f_lower(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "lower()", {});
  return Value(py::lower(soft_str(v)));
}

Value f_upper(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "upper()", {});
  return Value(py::upper(soft_str(v)));
}

Value f_map(Renderer& r, const Value& v, const CallArgs& ca) {
  std::vector<Value> out;
  if (!truthy(v)) return str_list(out).as_iterator();
  bool by_attr = ca.pos.empty();
  Value attribute, def;
  if (by_attr) {
    for (auto& [k, val] : ca.kw) {
      if (k == "attribute") attribute = val;
      else if (k == "default") def = val;
      else throw EvalError(cat("Unexpected keyword argument '", k, "'"));
    }
    if (attribute.is_undefined()) throw EvalError("map requires a filter argument");
  }
  for (auto& it : iterate(v)) {
    if (by_attr) {
      Value x = get_path(it, attribute);
      if (x.is_undefined() && !def.is_undefined() && !def.is_none()) x = def;
      out.push_back(x);
    } else {
      if (!ca.pos[0].is_string()) throw EvalError("map: filter name must be a string");
      CallArgs rest;
      rest.pos.assign(ca.pos.begin() + 1, ca.pos.end());
      rest.kw = ca.kw;
      out.push_back(r.filter(ca.pos[0].str(), it, rest));
    }
  }
  return str_list(out).as_iterator();
}

Value min_max(const Value& v, const CallArgs& ca, bool want_max) {
  Args a(ca, want_max ? "max()" : "min()", {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) {
    Value k = a.has(1) ? get_path(x, a.get(1)) : x;
    return a.boolean(0) ? k : ignore_case(k);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = want_max ? less(key(items[best]), key(items[i]), ">") : less(key(items[i]), key(items[best]), "<");
    if (better) best = i;
  }
  return items[best];
}
Value f_max(Renderer&, const Value& v, const CallArgs& ca) { return min_max(v, ca, true); }
Value f_min(Renderer&, const Value& v, const CallArgs& ca) { return min_max(v, ca, false); }

Value select_reject(Renderer& r, const Value& v, const CallArgs& ca, bool lookup_attr, bool select) {
  std::vector<Value> out;
  if (!truthy(v)) return str_list(out).as_iterator();
  size_t off = 0;
  Value attr;
  if (lookup_attr) {
    if (ca.pos.empty()) throw EvalError("Missing parameter for attribute name");
    attr = ca.pos[0];
    off = 1;
  }
  bool has_test = ca.pos.size() > off;
  CallArgs rest;
  if (has_test) {
    if (!ca.pos[off].is_string()) throw EvalError("test name must be a string");
    rest.pos.assign(ca.pos.begin() + static_cast<long>(off) + 1, ca.pos.end());
    rest.kw = ca.kw;
  }
  for (auto& it : iterate(v)) {
    Value x = lookup_attr ? get_path(it, attr) : it;
    bool ok = has_test ? r.test(ca.pos[off].str(), x, rest) : truthy(x);
    if (ok == select) out.push_back(it);
  }
  return str_list(out).as_iterator();
}
Value f_select(Renderer& r, const Value& v, const CallArgs& ca) { return select_reject(r, v, ca, false, true); }
Value f_reject(Renderer& r, const Value& v, const CallArgs& ca) { return select_reject(r, v, ca, false, false); }
Value f_selectattr(Renderer& r, const Value& v, const CallArgs& ca) { return select_reject(r, v, ca, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, const CallArgs& ca) { return select_reject(r, v, ca, true, false); }

Value f_replace(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "replace()", {"old", "new", "count"});
  int64_t count = a.has(2) && !a.get(2).is_none() ? a.integer(2) : -1;
  return Value(py::replace(soft_str(v), soft_str(a.get(0)), soft_str(a.get(1)), count));
}

Value f_reverse(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "reverse()", {});
  if (v.is_string()) return slice(v, Value::none(), Value::none(), Value(-1));
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return str_list(items).as_iterator();
}

Value f_round(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "round()", {"precision", "method"});
  int64_t p = a.has(0) ? a.integer(0) : 0;
  std::string method = a.has(1) ? a.str(1) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    throw EvalError("method must be common, ceil or floor");
  if (!v.is_number()) throw EvalError(cat("TypeError: type ", type_name(v), " doesn't define __round__ method"));
  if (method == "common") {
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    char buf[512];
    if (p < 0 || p > 300) return Value(v.as_double());
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(p), v.as_double());
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(p));
  double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "safe()", {});
  return Value(soft_str(v));
}

Value f_sort(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "sort()", {"reverse", "case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  bool rev = a.boolean(0), cs = a.boolean(1);
  std::vector<std::string> attrs;
  if (a.has(2) && a.get(2).is_string()) attrs = py::split(a.str(2), std::string(","), -1);
  auto key = [&](const Value& x) -> Value {
    if (a.has(2) && !a.get(2).is_string() && !a.get(2).is_none()) {
      Value k = get_path(x, a.get(2));
      return cs ? k : ignore_case(k);
    }
    if (attrs.size() <= 1) {
      Value k = attrs.empty() ? x : get_path(x, Value(attrs[0]));
      return cs ? k : ignore_case(k);
    }
    std::vector<Value> ks;
    for (auto& at : attrs) {
      Value k = get_path(x, Value(at));
      ks.push_back(cs ? k : ignore_case(k));
    }
    return make_list(ks, "sort() key");
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& it : items) keyed.emplace_back(key(it), it);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? less(y.first, x.first, "<") : less(x.first, y.first, "<");
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return str_list(out);
}

Value f_string(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "string()", {});
  return Value(soft_str(v));
}

Value f_sum(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "sum()", {"attribute", "start"});
  Value acc = a.has(1) ? a.get(1) : Value(0);
  for (auto& it : iterate(v)) acc = binary_op("+", acc, a.has(0) ? get_path(it, a.get(0)) : it);
  return acc;
}

Value f_title(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "title()", {});
  // split on runs of [-\s({\[<], capitalising the first char of every piece
  std::u32string u = py::decode(soft_str(v));
  auto is_sep = [](char32_t c) { return py::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    bool sep = is_sep(u[i]);
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    std::u32string piece = u.substr(i, j - i);
    out += py::upper(py::encode(piece.substr(0, 1))) + py::lower(py::encode(piece.substr(1)));
    i = j;
  }
  return Value(std::move(out));
}

Value f_tojson(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "tojson()", {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (v.is_iterator()) throw EvalError("TypeError: Object of type generator is not JSON serializable");
  DumpOptions o;
  o.ensure_ascii = a.boolean(0);
  if (a.has(1) && !a.get(1).is_none()) {
    if (a.get(1).is_string()) o.indent = a.str(1);
    else o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, a.integer(1))), ' ');
    o.item_sep = ",";
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& s = a.get(2);
    if (!s.is_list() || s.size() != 2 || !s.at(0).is_string() || !s.at(1).is_string())
      throw EvalError("tojson(): separators must be a pair of strings");
    o.item_sep = s.at(0).str();
    o.key_sep = s.at(1).str();
  }
  o.sort_keys = a.boolean(3);
  return Value(py_json_dumps(v.to_json("tojson()"), o));
}

Value f_trim(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "trim()", {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a.get(0).is_none()) chars = a.str(0);
  return Value(py::strip(soft_str(v), chars, true, true));
}

Value f_unique(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "unique()", {"case_sensitive", "attribute"});
  std::vector<Value> seen, out;
  for (auto& it : iterate(v)) {
    Value k = a.has(1) ? get_path(it, a.get(1)) : it;
    if (!a.boolean(0)) k = ignore_case(k);
    bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); });
    if (!dup) {
      seen.push_back(k);
      out.push_back(it);
    }
  }
  return str_list(out).as_iterator();
}

Value f_wordcount(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "wordcount()", {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : py::decode(soft_str(v))) {
    bool w = c == '_' || py::is_alnum_cp(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

// truncate(s, length=255, killwords=False, end='...', leeway=5), in code points.
Value f_truncate(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "truncate()", {"length", "killwords", "end", "leeway"});
  std::u32string s = py::decode(soft_str(v));
  int64_t length = a.has(0) ? a.integer(0) : 255, leeway = a.has(3) && !a.get(3).is_none() ? a.integer(3) : 5;
  std::u32string end = py::decode(a.has(2) ? a.str(2) : "...");
  const auto end_len = static_cast<int64_t>(end.size());
  if (length < end_len) throw EvalError(cat("AssertionError: expected length >= ", end_len, ", got ", length));
  if (leeway < 0) throw EvalError(cat("AssertionError: expected leeway >= 0, got ", leeway));
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value(py::encode(s));
  std::u32string head = s.substr(0, static_cast<size_t>(length - end_len));
  if (!a.boolean(1)) {  // s[:length - len(end)].rsplit(" ", 1)[0]
    size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head.resize(sp);
  }
  return Value(py::encode(head + end));
}

// The part of html.unescape that templates meet: numeric references and the common named ones.
std::string html_unescape(const std::string& s) {
  static const std::unordered_map<std::string, char32_t> named = {
      {"amp", U'&'},    {"lt", U'<'},     {"gt", U'>'},     {"quot", U'"'},   {"apos", U'\''},
      {"nbsp", 0xA0},   {"copy", 0xA9},   {"reg", 0xAE},    {"raquo", 0xBB},  {"laquo", 0xAB},
      {"hellip", 0x2026}, {"mdash", 0x2014}, {"ndash", 0x2013}, {"trade", 0x2122}, {"euro", 0x20AC}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t semi = s[i] == '&' ? s.find(';', i) : std::string::npos;
    if (semi != std::string::npos && semi - i <= 10) {
      std::string name = s.substr(i + 1, semi - i - 1);
      char32_t cp = 0;
      bool ok = false;
      if (name.size() > 1 && name[0] == '#') {
        bool hex = name[1] == 'x' || name[1] == 'X';
        std::string digits = name.substr(hex ? 2 : 1);
        ok = !digits.empty() && digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") ==
                                    std::string::npos;
        if (ok) {
          unsigned long n = std::stoul(digits, nullptr, hex ? 16 : 10);
          cp = (n == 0 || n > 0x10FFFF || (n >= 0xD800 && n <= 0xDFFF)) ? 0xFFFD : static_cast<char32_t>(n);
        }
      } else if (auto it = named.find(name); it != named.end()) {
        cp = it->second, ok = true;
      }
      if (ok) {
        out += py::encode(cp);
        i = semi + 1;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

// Removes what the regex `open.*?close` (re.DOTALL, as markupsafe compiles it) matches.
std::string strip_matches(const std::string& s, const std::string& open, const std::string& close) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, open.size(), open) == 0) {
      size_t e = s.find(close, i + open.size());
      if (e != std::string::npos) {
        i = e + close.size();
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

// striptags: markupsafe's Markup.striptags (comments, then tags, whitespace collapsed, unescaped).
Value f_striptags(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "striptags()", {});
  std::string s = strip_matches(strip_matches(soft_str(v), "<!--", "-->"), "<", ">");
  std::string joined;
  for (const auto& w : py::split(s, std::nullopt, -1)) joined += (joined.empty() ? "" : " ") + w;
  return Value(html_unescape(joined));
}

// slice(value, slices, fill_with=None): `slices` columns, the first ones one longer.
Value f_slice(Renderer&, const Value& v, const CallArgs& ca) {
  Args a(ca, "slice()", {"slices", "fill_with"});
  std::vector<Value> seq = iterate(v);
  int64_t slices = a.integer(0), n = static_cast<int64_t>(seq.size());
  if (slices == 0) throw EvalError("ZeroDivisionError: integer division or modulo by zero");
  int64_t per = n / slices, extra = n % slices;
  std::vector<Value> out;
  int64_t offset = 0;
  for (int64_t k = 0; k < slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> part(seq.begin() + std::min(start, n), seq.begin() + std::clamp(end, std::min(start, n), n));
    if (a.has(1) && !a.get(1).is_none() && k >= extra) part.push_back(a.get(1));
    out.push_back(str_list(part));
  }
  return str_list(out).as_iterator();
}

Value f_pprint(Renderer&, const Value& v, const CallArgs& ca) {
  Args(ca, "pprint()", {});
  return Value(repr(v));
}

const std::unordered_map<std::string, FilterFn>& registry() {
  static const std::unordered_map<std::string, FilterFn> m = {
      {"abs", f_abs},         {"attr", f_attr},         {"batch", f_batch},
      {"capitalize", f_capitalize}, {"center", f_center}, {"count", f_length},
      {"d", f_default},       {"default", f_default},   {"dictsort", f_dictsort},
      {"e", f_escape},        {"escape", f_escape},     {"forceescape", f_escape},
      {"first", f_first},     {"float", f_float},       {"format", f_format},
      {"indent", f_indent},   {"int", f_int},           {"items", f_items},
      {"join", f_join},       {"last", f_last},         {"length", f_length},
      {"list", f_list},       {"lower", f_lower},       {"map", f_map},
      {"max", f_max},         {"min", f_min},           {"pprint", f_pprint},
      {"reject", f_reject},   {"rejectattr", f_rejectattr}, {"replace", f_replace},
      {"reverse", f_reverse}, {"round", f_round},       {"safe", f_safe},
      {"select", f_select},   {"selectattr", f_selectattr}, {"sort", f_sort},
      {"string", f_string},   {"sum", f_sum},           {"title", f_title},
      {"tojson", f_tojson},   {"trim", f_trim},         {"unique", f_unique},
      {"upper", f_upper},     {"wordcount", f_wordcount}, {"truncate", f_truncate},
      {"striptags", f_striptags}, {"slice", f_slice},
  };
  return m;
}

}  // namespace

bool has_filter(const std::string& name) { return registry().count(name) > 0; }

Value call_filter(Renderer& r, const std::string& name, const Value& input, const CallArgs& args) {
  auto it = registry().find(name);
  if (it == registry().end()) throw EvalError("No filter named '" + name + "'.");
  return it->second(r, input, args);
}

}  // namespace qinfer::jinja
