#include "jinja/py_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "util/py_escape.h"
#include "util/py_format.h"

namespace qinfer::jinja {
namespace {

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  char buf[16];
  for (char32_t c : py::decode(s)) {
    // ensure_ascii escapes everything outside ' '..'~' (DEL included).
    if (c < 0x7F || (c == 0x7F && !ensure_ascii)) {
      json_escape_byte(out, static_cast<char>(c));
    } else if (ensure_ascii) {
      if (c >= 0x10000) {
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      out += py::encode(c);
    }
  }
  out += '"';
}

void dump(const Json& j, const DumpOptions& opt, int level, std::string& out) {
  auto newline = [&](int lvl) {
    if (!opt.indent) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *opt.indent;
  };
  switch (j.type()) {
    case Json::value_t::null: out += "null"; return;
    case Json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; return;
    case Json::value_t::number_integer: out += std::to_string(j.get<int64_t>()); return;
    case Json::value_t::number_unsigned: out += std::to_string(j.get<uint64_t>()); return;
    case Json::value_t::number_float: out += py_json_float(j.get<double>()); return;
    case Json::value_t::string: dump_string(j.get_ref<const std::string&>(), opt.ensure_ascii, out); return;
    case Json::value_t::array: {
      if (j.empty()) { out += "[]"; return; }
      out += '[';
      bool first = true;
      for (const auto& e : j) {
        if (!first) out += opt.item_sep;
        first = false;
        newline(level + 1);
        dump(e, opt, level + 1, out);
      }
      newline(level);
      out += ']';
      return;
    }
    case Json::value_t::object: {
      if (j.empty()) { out += "{}"; return; }
      std::vector<Json::const_iterator> items;
      for (auto it = j.begin(); it != j.end(); ++it) items.push_back(it);
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.key() < b.key(); });
      out += '{';
      bool first = true;
      for (const auto& it : items) {
        if (!first) out += opt.item_sep;
        first = false;
        newline(level + 1);
        dump_string(it.key(), opt.ensure_ascii, out);
        out += opt.key_sep;
        dump(it.value(), opt, level + 1, out);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw EvalError("TypeError: value is not JSON serializable");
  }
}

}  // namespace

std::string py_json_dumps(const Json& j, const DumpOptions& opt) {
  std::string out;
  dump(j, opt, 0, out);
  return out;
}

}  // namespace qinfer::jinja
