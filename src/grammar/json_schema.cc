#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "grammar/json_numbers.h"
#include "grammar/regex.h"

namespace qinfer::grammar {

using ojson = nlohmann::ordered_json;

namespace {

const char* const kAnnotations[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                    "deprecated", "readOnly", "writeOnly", "$anchor", "contentMediaType",
                                    "contentEncoding", "nullable", "strict", "name"};

bool is_annotation(const std::string& k) {
  for (const char* a : kAnnotations)
    if (k == a) return true;
  return false;
}

NodePtr sep_comma() { return literal(", "); }

// Format patterns (RFC 3339 date/time, RFC 4122 uuid, simplified email/hostname/uri).
const std::map<std::string, std::string>& formats() {
  // Dates never produce February 29 (so no leap-year arithmetic); every produced value is valid.
  static const std::string date =
      "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))";
  static const std::string time = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?";
  static const std::map<std::string, std::string> f = {
      {"date", date},
      {"time", time},
      {"date-time", date + "T" + time},
      {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
      {"email", "[a-zA-Z0-9_+-]{1,32}(\\.[a-zA-Z0-9_+-]{1,32}){0,3}@(" + label + "\\.){1,4}[a-zA-Z]{2,8}"},
      {"ipv4", "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"},
      {"hostname", label + "(\\." + label + "){0,4}"},
      {"uri", "https?://" + label + "(\\." + label + "){0,4}(/[a-zA-Z0-9._~-]{0,32}){0,8}"},
  };
  return f;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const ojson& root, std::string_view where) : root_(root), where_(where) {}

  NodePtr compile(const ojson& s, const std::string& ptr) {
    if (s.is_boolean()) return s.get<bool>() ? any_json_value(kMaxAnyDepth) : nothing();
    if (!s.is_object()) fail(ptr, "a schema must be an object or a boolean");
    if (s.contains("$ref")) return compile_ref(s, ptr);
    for (const char* k : {"anyOf", "oneOf"}) {
      if (s.contains(k)) return compile_any_of(s, k, ptr);
    }
    if (s.contains("allOf")) {
      const ojson& a = s["allOf"];
      if (!a.is_array() || a.size() != 1) unsupported(ptr, "allOf", "allOf with more than one schema");
      check_only(s, ptr, {"allOf"});
      return compile(a[0], ptr + "/allOf/0");
    }
    if (s.contains("const")) {
      check_only(s, ptr, {"const", "type", "enum"});
      return literal(s["const"].dump());
    }
    if (s.contains("enum")) {
      const ojson& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(ptr + "/enum", "enum must be a non-empty array");
      check_only(s, ptr, {"enum", "type"});
      std::vector<NodePtr> alts;
      for (const auto& v : e) alts.push_back(literal(v.dump()));
      return alt(std::move(alts));
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const ojson& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array()) {
        for (const auto& x : t) {
          if (!x.is_string()) fail(ptr + "/type", "type entries must be strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(ptr + "/type", "type must be a string or an array of strings");
      }
    } else {
      // Infer from the keywords present.
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) types = {"object"};
      else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems")) types = {"array"};
      else if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength")) types = {"string"};
      else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) types = {"number"};
    }
    check_keywords(s, ptr);
    if (types.empty()) return any_json_value(kMaxAnyDepth);
    std::vector<NodePtr> alts;
    for (const auto& t : types) alts.push_back(compile_type(s, t, ptr));
    return alt(std::move(alts));
  }

 private:
  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
    throw GrammarError(std::string(where_) + (ptr.empty() ? "" : " at " + ptr) + ": " + what);
  }
  [[noreturn]] void unsupported(const std::string& ptr, const std::string& key, const std::string& what) const {
    fail(ptr.empty() ? "/" + key : ptr + "/" + key, "unsupported JSON Schema feature: " + what);
  }

  void check_only(const ojson& s, const std::string& ptr, std::initializer_list<const char*> allowed) const {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (is_annotation(it.key())) continue;
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) unsupported(ptr, it.key(), "'" + it.key() + "' combined with '" + *allowed.begin() + "'");
    }
  }

  void check_keywords(const ojson& s, const std::string& ptr) const {
    static const std::set<std::string> known = {
        "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "$defs", "definitions", "uniqueItems"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (is_annotation(k)) continue;
      if (k == "uniqueItems") {
        if (it.value() == false) continue;
        unsupported(ptr, k, "uniqueItems: true");
      }
      if (!known.count(k)) unsupported(ptr, k, "'" + k + "'");
    }
  }

  NodePtr compile_ref(const ojson& s, const std::string& ptr) {
    if (!s["$ref"].is_string()) fail(ptr + "/$ref", "$ref must be a string");
    const std::string ref = s["$ref"];
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != "$ref" && it.key() != "$defs" && it.key() != "definitions" && !is_annotation(it.key())) {
        unsupported(ptr, it.key(), "'" + it.key() + "' next to $ref");
      }
    }
    if (ref.empty() || ref[0] != '#') unsupported(ptr, "$ref", "a $ref outside this schema ('" + ref + "')");
    const ojson* target = &root_;
    try {
      if (ref.size() > 1) target = &root_.at(ojson::json_pointer(ref.substr(1)));
    } catch (const std::exception&) {
      fail(ptr + "/$ref", "'" + ref + "' does not name a part of this schema");
    }
    int& depth = ref_depth_[ref];
    if (depth >= kMaxRefDepth) return nothing();  // recursion bound: this branch is cut
    ++depth;
    NodePtr n = compile(*target, ref.substr(1));
    --depth;
    return n;
  }

  NodePtr compile_any_of(const ojson& s, const char* key, const std::string& ptr) {
    const ojson& a = s[key];
    if (!a.is_array() || a.empty()) fail(ptr + "/" + key, std::string(key) + " must be a non-empty array");
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != key && it.key() != "$defs" && it.key() != "definitions" && !is_annotation(it.key())) {
        unsupported(ptr, it.key(), "'" + it.key() + "' next to " + key);
      }
    }
    std::vector<NodePtr> alts;
    for (size_t i = 0; i < a.size(); ++i) alts.push_back(compile(a[i], ptr + "/" + key + "/" + std::to_string(i)));
    NodePtr n = alt(std::move(alts));
    if (is_nothing(n)) fail(ptr + "/" + key, "no alternative can be generated (recursion too deep?)");
    return n;
  }

  static int count(const ojson& s, const char* k, int dflt, const std::string& ptr, const SchemaCompiler* self) {
    if (!s.contains(k)) return dflt;
    const ojson& v = s[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) self->fail(ptr + "/" + k, std::string(k) + " must be a non-negative integer");
    if (v.get<int64_t>() > kMaxRepeat) self->unsupported(ptr, k, std::string(k) + " above 1000");
    return int(v.get<int64_t>());
  }

  NodePtr compile_type(const ojson& s, const std::string& t, const std::string& ptr) {
    if (t == "string") return compile_string(s, ptr);
    if (t == "integer") return compile_integer(s, ptr);
    if (t == "number") return compile_number(s, ptr);
    if (t == "boolean") return alt({literal("true"), literal("false")});
    if (t == "null") return literal("null");
    if (t == "object") return compile_object(s, ptr);
    if (t == "array") return compile_array(s, ptr);
    fail(ptr + "/type", "unknown type '" + t + "'");
  }

  NodePtr compile_string(const ojson& s, const std::string& ptr) {
    const int mn = count(s, "minLength", 0, ptr, this), mx = count(s, "maxLength", -1, ptr, this);
    if (s.contains("pattern")) {
      if (s.contains("format")) unsupported(ptr, "pattern", "pattern together with format");
      if (s.contains("minLength") || s.contains("maxLength")) unsupported(ptr, "pattern", "pattern together with minLength/maxLength");
      if (!s["pattern"].is_string()) fail(ptr + "/pattern", "pattern must be a string");
      std::string p = s["pattern"];
      // JSON Schema patterns search; an unanchored pattern is taken as a whole-value match
      // unless it starts with ^ / ends with $ (both are accepted and ignored).
      return seq({literal("\""), parse_regex(p, true, std::string(where_) + " at " + ptr + "/pattern"), literal("\"")});
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) fail(ptr + "/format", "format must be a string");
      const std::string f = s["format"];
      auto it = formats().find(f);
      if (it == formats().end()) unsupported(ptr, "format", "string format '" + f + "'");
      if (s.contains("minLength") || s.contains("maxLength")) unsupported(ptr, "format", "format together with minLength/maxLength");
      return seq({literal("\""), parse_regex(it->second, true, "format " + f), literal("\"")});
    }
    if (mx >= 0 && mx < mn) fail(ptr, "maxLength is below minLength");
    return json_string(mn, mx);
  }

  std::optional<int64_t> int_bound(const ojson& s, const char* k, const std::string& ptr, bool lower) {
    if (!s.contains(k)) return std::nullopt;
    const ojson& v = s[k];
    if (v.is_boolean()) unsupported(ptr, k, std::string("boolean ") + k + " (draft 4)");
    if (!v.is_number()) fail(ptr + "/" + k, std::string(k) + " must be a number");
    double d = v.get<double>();
    if (std::fabs(d) > 9.2e18) fail(ptr + "/" + k, std::string(k) + " is out of the int64 range");
    const bool excl = std::string(k).rfind("exclusive", 0) == 0;
    double r = lower ? std::ceil(d) : std::floor(d);
    int64_t x = int64_t(r);
    if (excl && r == d) x += lower ? 1 : -1;
    return x;
  }

  NodePtr compile_integer(const ojson& s, const std::string& ptr) {
    std::optional<int64_t> lo = int_bound(s, "minimum", ptr, true), hi = int_bound(s, "maximum", ptr, false);
    if (auto x = int_bound(s, "exclusiveMinimum", ptr, true)) lo = lo ? std::max(*lo, *x) : *x;
    if (auto x = int_bound(s, "exclusiveMaximum", ptr, false)) hi = hi ? std::min(*hi, *x) : *x;
    NodePtr n = json_integer(lo, hi);
    if (is_nothing(n)) fail(ptr, "no integer lies within the bounds");
    return n;
  }

  std::optional<NumberBound> num_bound(const ojson& s, const std::string& ptr, bool lower) {
    std::optional<NumberBound> out;
    static const char* const kLower[] = {"minimum", "exclusiveMinimum"};
    static const char* const kUpper[] = {"maximum", "exclusiveMaximum"};
    for (const char* k : lower ? kLower : kUpper) {
      if (!s.contains(k)) continue;
      const ojson& v = s[k];
      if (!v.is_number()) fail(ptr + "/" + k, std::string(k) + " must be a number");
      const double d = v.get<double>();
      if (d != std::floor(d) || std::fabs(d) > 9e18) {
        unsupported(ptr, k, std::string("a non-integer ") + k + " on a number (integer-valued bounds only)");
      }
      NumberBound b{int64_t(d), std::string(k).rfind("exclusive", 0) == 0};
      if (!out || (lower ? (b.value > out->value || (b.value == out->value && b.exclusive))
                         : (b.value < out->value || (b.value == out->value && b.exclusive)))) {
        out = b;
      }
    }
    return out;
  }

  NodePtr compile_number(const ojson& s, const std::string& ptr) {
    NodePtr n = json_number(num_bound(s, ptr, true), num_bound(s, ptr, false));
    if (is_nothing(n)) fail(ptr, "no number lies within the bounds");
    return n;
  }

  NodePtr compile_object(const ojson& s, const std::string& ptr) {
    const bool has_props = s.contains("properties");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(ptr + "/required", "required must be an array of strings");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) fail(ptr + "/required", "required must be an array of strings");
        required.insert(r.get<std::string>());
      }
    }
    NodePtr extra;  // schema of additional properties, null: none
    if (s.contains("additionalProperties")) {
      const ojson& ap = s["additionalProperties"];
      if (!(ap.is_boolean() && !ap.get<bool>())) extra = compile(ap, ptr + "/additionalProperties");
      if (extra && is_nothing(extra)) extra = nullptr;
    } else if (!has_props) {
      if (required.empty()) return any_json_object(kMaxAnyDepth - 1);
      extra = any_json_value(kMaxAnyDepth - 1);
    }
    std::vector<NodePtr> members;
    std::vector<bool> req;
    std::set<std::string> declared;
    if (has_props) {
      const ojson& p = s["properties"];
      if (!p.is_object()) fail(ptr + "/properties", "properties must be an object");
      for (auto it = p.begin(); it != p.end(); ++it) {
        declared.insert(it.key());
        NodePtr v = compile(it.value(), ptr + "/properties/" + it.key());
        members.push_back(seq({json_string_literal(it.key()), literal(": "), v}));
        req.push_back(required.count(it.key()) > 0);
        if (req.back() && is_nothing(v)) fail(ptr + "/properties/" + it.key(), "required property can never be generated");
      }
    }
    for (const auto& r : required) {
      if (declared.count(r)) continue;
      if (!extra) fail(ptr + "/required", "required property '" + r + "' is not declared and additional properties are not allowed");
      members.push_back(seq({json_string_literal(r), literal(": "), extra}));
      req.push_back(true);
    }
    if (extra) {
      // Extra keys come after the declared ones and are identifier-like ([A-Za-z0-9_]{1,32}).
      NodePtr key = seq({literal("\""), repeat(utf8_class({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}), 1, 32),
                         literal("\"")});
      NodePtr one = seq({key, literal(": "), extra});
      members.push_back(seq({one, repeat(seq({sep_comma(), one}), 0, -1)}));
      req.push_back(false);
    }
    return seq({literal("{"), props(std::move(members), std::move(req), sep_comma()), literal("}")});
  }

  NodePtr compile_array(const ojson& s, const std::string& ptr) {
    int mn = count(s, "minItems", 0, ptr, this), mx = count(s, "maxItems", -1, ptr, this);
    if (mx >= 0 && mx < mn) fail(ptr, "maxItems is below minItems");
    std::vector<NodePtr> prefix;
    if (s.contains("prefixItems")) {
      const ojson& p = s["prefixItems"];
      if (!p.is_array()) fail(ptr + "/prefixItems", "prefixItems must be an array");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(compile(p[i], ptr + "/prefixItems/" + std::to_string(i)));
    }
    NodePtr item;
    if (s.contains("items")) {
      const ojson& it = s["items"];
      if (it.is_array()) unsupported(ptr, "items", "items as an array (use prefixItems)");
      if (!(it.is_boolean() && !it.get<bool>())) item = compile(it, ptr + "/items");
      if (item && is_nothing(item)) item = nullptr;
    } else if (prefix.empty()) {
      item = any_json_value(kMaxAnyDepth - 1);
    }
    // Elements: prefix[0..k) then items; total count in [mn, mx].
    const int np = int(prefix.size());
    std::vector<NodePtr> alts;
    // Arrays that end inside the prefix (only when count <= np).
    for (int k = std::max(mn, 0); k <= np && (mx < 0 || k <= mx); ++k) {
      if (k < np && k < mn) continue;
      if (k == np && item) break;  // handled below together with the items
      std::vector<NodePtr> parts;
      for (int i = 0; i < k; ++i) {
        if (i) parts.push_back(sep_comma());
        parts.push_back(prefix[size_t(i)]);
      }
      alts.push_back(seq(std::move(parts)));
    }
    if (item) {
      std::vector<NodePtr> parts;
      for (int i = 0; i < np; ++i) {
        if (i) parts.push_back(sep_comma());
        parts.push_back(prefix[size_t(i)]);
      }
      const int rmin = std::max(0, mn - np);
      const int rmax = mx < 0 ? -1 : mx - np;
      if (rmax < 0 && mx >= 0) {
        // maxItems below the prefix length: handled by the prefix-only alternatives.
      } else if (np == 0) {
        // item (", " item){rmin-1, rmax-1}, optional when rmin == 0.
        NodePtr more = repeat(seq({sep_comma(), item}), std::max(0, rmin - 1), rmax < 0 ? -1 : rmax - 1);
        NodePtr list = seq({item, more});
        alts.push_back(rmin == 0 ? optional(list) : list);
      } else {
        parts.push_back(repeat(seq({sep_comma(), item}), rmin, rmax));
        alts.push_back(seq(std::move(parts)));
      }
    }
    NodePtr body = alt(std::move(alts));
    if (is_nothing(body)) fail(ptr, "no array satisfies these item constraints");
    return seq({literal("["), body, literal("]")});
  }

  const ojson& root_;
  std::string_view where_;
  std::map<std::string, int> ref_depth_;
};

NodePtr string_char() { return json_char(complement({})); }

}  // namespace

NodePtr json_string(int min_len, int max_len) {
  return seq({literal("\""), repeat(string_char(), min_len, max_len), literal("\"")});
}

NodePtr json_string_literal(std::string_view value) { return literal(ojson(std::string(value)).dump()); }

NodePtr any_json_value(int depth) {
  std::vector<NodePtr> alts = {json_string(0, -1), json_number(std::nullopt, std::nullopt), literal("true"),
                               literal("false"), literal("null")};
  if (depth > 0) {
    NodePtr inner = any_json_value(depth - 1);
    alts.push_back(any_json_object(depth));
    alts.push_back(seq({literal("["), optional(seq({inner, repeat(seq({sep_comma(), inner}), 0, -1)})), literal("]")}));
  }
  return alt(std::move(alts));
}

NodePtr any_json_object(int depth) {
  NodePtr inner = any_json_value(std::max(0, depth - 1));
  NodePtr member = seq({json_string(0, -1), literal(": "), inner});
  return seq({literal("{"), optional(seq({member, repeat(seq({sep_comma(), member}), 0, -1)})), literal("}")});
}

NodePtr json_schema_grammar(const ojson& schema, std::string_view where) {
  if (!schema.is_object() && !schema.is_boolean()) {
    throw GrammarError(std::string(where) + ": the schema must be a JSON object");
  }
  SchemaCompiler c(schema, where);
  NodePtr n = c.compile(schema, "");
  if (is_nothing(n)) throw GrammarError(std::string(where) + ": the schema allows no value at all");
  return n;
}

}  // namespace qinfer::grammar
