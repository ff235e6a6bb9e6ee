#include "grammar/tool_call.h"

#include <set>

#include "grammar/json_schema.h"
#include "grammar/regex.h"

namespace qinfer::grammar {

using ojson = nlohmann::ordered_json;

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

NodePtr raw_text(int mn, int mx) { return repeat(utf8_class(complement({{'<', '<'}})), mn, mx); }

NodePtr value_grammar(const ojson& p, const std::string& where) {
  if (!p.is_object()) return raw_text(0, -1);
  if (p.contains("anyOf") && p["anyOf"].is_array()) {
    std::vector<NodePtr> alts;
    for (size_t i = 0; i < p["anyOf"].size(); ++i) {
      alts.push_back(value_grammar(p["anyOf"][i], where + "/anyOf/" + std::to_string(i)));
    }
    return alt(std::move(alts));
  }
  std::string type = p.contains("type") && p["type"].is_string() ? lower(p["type"].get<std::string>()) : "string";
  if (p.contains("enum") && p["enum"].is_array()) {
    std::vector<NodePtr> alts;
    for (const auto& v : p["enum"]) {
      std::string t = v.is_string() ? v.get<std::string>() : v.dump();
      if (t.find('<') != std::string::npos) {
        throw GrammarError(where + "/enum: a tool-call enum value may not contain '<'");
      }
      alts.push_back(literal(t));
    }
    return alt(std::move(alts));
  }
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" || type == "enum") {
    const int mn = p.contains("minLength") && p["minLength"].is_number_unsigned() ? int(p["minLength"].get<int64_t>()) : 0;
    const int mx = p.contains("maxLength") && p["maxLength"].is_number_unsigned() ? int(p["maxLength"].get<int64_t>()) : -1;
    if (mn > kMaxRepeat || mx > kMaxRepeat) throw GrammarError(where + ": minLength/maxLength above 1000");
    if (p.contains("pattern") && p["pattern"].is_string()) {
      NodePtr r = parse_regex(p["pattern"].get<std::string>(), false, where + "/pattern");
      return r;
    }
    return raw_text(mn, mx);
  }
  // Everything else is parsed back as JSON / Python literals: generate JSON for the schema.
  return json_schema_grammar(p, where);
}

NodePtr call_body(const ojson& fn, const std::string& where) {
  std::vector<NodePtr> members;
  std::vector<bool> req;
  const ojson* params = fn.contains("parameters") && fn["parameters"].is_object() ? &fn["parameters"] : nullptr;
  if (params && params->contains("properties") && (*params)["properties"].is_object()) {
    std::set<std::string> required;
    if (params->contains("required") && (*params)["required"].is_array()) {
      for (const auto& r : (*params)["required"])
        if (r.is_string()) required.insert(r.get<std::string>());
    }
    const ojson& props = (*params)["properties"];
    for (auto it = props.begin(); it != props.end(); ++it) {
      const std::string w = where + "/parameters/properties/" + it.key();
      if (it.key().find_first_of("<>\n") != std::string::npos) {
        throw GrammarError(w + ": a parameter name used in a forced tool call may not contain '<', '>' or a newline");
      }
      members.push_back(seq({literal("<parameter=" + it.key() + ">\n"), value_grammar(it.value(), w),
                             literal("\n</parameter>\n")}));
      req.push_back(required.count(it.key()) > 0);
    }
  }
  return seq({props(std::move(members), std::move(req), empty()), literal("</function>\n</tool_call>")});
}

}  // namespace

NodePtr tool_call_grammar(const ojson& tools, const std::string& named, std::string_view where) {
  std::vector<NodePtr> alts;
  if (!tools.is_array()) throw GrammarError(std::string(where) + ": tools must be a list");
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const ojson& fn = t.contains("function") && t["function"].is_object() ? t["function"] : t;
    if (!fn.contains("name") || !fn["name"].is_string()) continue;
    const std::string name = fn["name"];
    const std::string w = "tools[" + std::to_string(i) + "].function";
    if (!named.empty()) {
      if (name == named) return call_body(fn, w);
      continue;
    }
    if (name.find_first_of("<>\n") != std::string::npos) {
      throw GrammarError(w + ".name: a function name may not contain '<', '>' or a newline");
    }
    alts.push_back(seq({literal(name + ">\n"), call_body(fn, w)}));
  }
  if (alts.empty()) throw GrammarError(std::string(where) + ": no function to call");
  return alt(std::move(alts));
}

}  // namespace qinfer::grammar
