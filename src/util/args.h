// Command-line parsing for the subcommands. Each subcommand declares the options
// it knows; an unknown option or a missing/ill-typed value is an Error naming it.
//   Args a(argc, argv, {{"model", true}, {"ids", true}, {"print-ids", false}});
//   a.get("model"), a.get_int("max-tokens", 16), a.has("print-ids"), a.positional()
// Both "--key value" and "--key=value" are accepted.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qinfer {

struct OptionSpec {
  std::string name;      // without the leading "--"
  bool takes_value;      // false: a flag
  bool repeatable = false;
};

class Args {
 public:
  Args(int argc, char** argv, const std::vector<OptionSpec>& specs);

  bool has(const std::string& name) const;
  std::string get(const std::string& name) const;  // required: Error if absent
  std::string get_or(const std::string& name, const std::string& def) const;
  std::vector<std::string> get_all(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t def) const;
  double get_double(const std::string& name, double def) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// "3,1,4" -> {3,1,4}; Error naming `what` on a malformed list.
std::vector<int> parse_int_list(const std::string& s, const std::string& what);

}  // namespace qinfer
