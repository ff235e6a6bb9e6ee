#include "util/args.h"

#include <cerrno>
#include <cstdlib>

#include "util/error.h"
#include "util/suggest.h"

namespace qinfer {

Args::Args(int argc, char** argv, const std::vector<OptionSpec>& specs) {
  std::map<std::string, const OptionSpec*> by_name;
  for (const auto& s : specs) by_name[s.name] = &s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a.substr(2), value;
      bool inline_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inline_value = true;
      }
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        std::vector<std::string> names;
        for (const auto& s : specs) names.push_back(s.name);
        const std::string near = nearest_name(name, names);
        if (!near.empty()) fail("unknown option --", name, " (did you mean --", near, "?)");
        fail("unknown option --", name);
      }
      const OptionSpec& spec = *it->second;
      if (spec.takes_value) {
        if (!inline_value) {
          if (i + 1 >= argc) fail("option --", name, " needs a value");
          value = argv[++i];
        }
      } else if (inline_value) {
        fail("option --", name, " takes no value");
      }
      auto& slot = values_[name];
      if (!slot.empty() && !spec.repeatable) slot.clear();
      slot.push_back(value);
    } else {
      positional_.push_back(a);
    }
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail("missing required option --", name);
  return it->second.back();
}

std::string Args::get_or(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t def) const {
  if (!has(name)) return def;
  std::string v = get(name);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) fail("option --", name, ": '", v, "' is not an integer");
  return x;
}

double Args::get_double(const std::string& name, double def) const {
  if (!has(name)) return def;
  std::string v = get(name);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') fail("option --", name, ": '", v, "' is not a number");
  return x;
}

std::vector<int> parse_int_list(const std::string& s, const std::string& what) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v < 0 || v > 0x7fffffff)
      fail(what, ": '", item, "' is not a non-negative integer");
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace qinfer
