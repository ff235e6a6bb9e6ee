// A quantization_config.dynamic rule's regular expression, matched as Python's re.match does
// (anchored at the start of the module name). PCRE2 with a parenthesis-nesting limit at
// compile time and match / depth / heap limits at match time, so a hostile config.json can
// neither overflow the stack (std::regex recursed once per nested group) nor hang the load
// with catastrophic backtracking: both end in an error naming the rule.
#pragma once
#include <memory>
#include <string>

namespace qinfer {

class ModuleRegex {
 public:
  // Throws qinfer::Error "<where>: bad regular expression ..." when it does not compile.
  ModuleRegex(const std::string& pattern, const std::string& where);
  ~ModuleRegex();
  ModuleRegex(const ModuleRegex&) = delete;
  ModuleRegex& operator=(const ModuleRegex&) = delete;

  // True if the pattern matches a prefix of `subject`. Throws qinfer::Error naming the rule
  // when matching passes the backtracking limits.
  bool match_prefix(const std::string& subject) const;

  static constexpr uint32_t kMatchLimit = 1000000;  // backtracking steps per match
  static constexpr uint32_t kDepthLimit = 1000;     // nested backtracking frames
  static constexpr uint32_t kNestLimit = 64;        // parenthesis nesting in the pattern

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string where_;
};

}  // namespace qinfer
