#include "jinja/py_json.h"

#include <algorithm>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "util/py_json_writer.h"

namespace qinfer::jinja {
namespace {

void dump_string(const std::string& s, bool ensure_ascii, PyJsonWriter& w) {
  if (ensure_ascii) w.string_ascii(py::decode(s));
  else w.string(s);  // the bytes as they are: invalid UTF-8 comes back out unchanged either way
}

// json.dumps's walk over a Json value; every spelling is PyJsonWriter's.
void dump(const Json& j, const DumpOptions& opt, PyJsonWriter& w) {
  switch (j.type()) {
    case Json::value_t::null: w.null(); return;
    case Json::value_t::boolean: w.boolean(j.get<bool>()); return;
    case Json::value_t::number_integer: w.integer(std::to_string(j.get<int64_t>())); return;
    case Json::value_t::number_unsigned: w.integer(std::to_string(j.get<uint64_t>())); return;
    case Json::value_t::number_float: w.floating(j.get<double>()); return;
    case Json::value_t::string: dump_string(j.get_ref<const std::string&>(), opt.ensure_ascii, w); return;
    case Json::value_t::array:
      w.begin_list();
      for (const auto& e : j) {
        w.item();
        dump(e, opt, w);
      }
      w.end_list();
      return;
    case Json::value_t::object: {
      std::vector<Json::const_iterator> items;
      for (auto it = j.begin(); it != j.end(); ++it) items.push_back(it);
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.key() < b.key(); });
      w.begin_dict();
      for (const auto& it : items) {
        w.item();
        dump_string(it.key(), opt.ensure_ascii, w);
        w.key_end();
        dump(it.value(), opt, w);
      }
      w.end_dict();
      return;
    }
    default:
      throw EvalError("TypeError: value is not JSON serializable");
  }
}

}  // namespace

std::string py_json_dumps(const Json& j, const DumpOptions& opt) {
  std::string out;
  PyJsonWriter w(out, PyJsonStyle{opt.indent, opt.item_sep, opt.key_sep});
  dump(j, opt, w);
  return out;
}

}  // namespace qinfer::jinja
