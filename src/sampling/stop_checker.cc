#include "sampling/stop_checker.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::sampling {

StopChecker::StopChecker(std::vector<std::string> stop, bool include_stop_str_in_output)
    : stop_(std::move(stop)), include_(include_stop_str_in_output) {
  for (size_t i = 0; i < stop_.size(); ++i)
    if (stop_[i].empty()) fail("stop[", i, "]: stop strings must not be empty");
}

// Length of the longest unreleased suffix that is a proper prefix of some stop string.
size_t StopChecker::holdback() const {
  if (include_) return 0;  // vLLM streams everything when the stop string is kept anyway
  const std::string_view pending = std::string_view(text_).substr(released_);
  size_t best = 0;
  for (const auto& s : stop_) {
    for (size_t k = std::min(s.size() - 1, pending.size()); k > best; --k) {
      if (pending.substr(pending.size() - k) == std::string_view(s).substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

StopChecker::Update StopChecker::push(std::string_view delta) {
  Update up;
  if (stopped_ || delta.empty()) return up;
  const size_t old_len = text_.size();
  text_.append(delta);
  for (const auto& s : stop_) {
    // Only text that could include a new character needs searching.
    const size_t from = old_len + 1 > s.size() ? old_len + 1 - s.size() : 0;
    const size_t pos = text_.find(s, from);
    if (pos == std::string::npos) continue;
    const size_t cut = include_ ? pos + s.size() : pos;
    stopped_ = true;
    up.stopped = true;
    up.stop_str = s;
    up.cut = cut;
    text_.resize(std::min(cut, text_.size()));
    if (released_ < text_.size()) up.text = text_.substr(released_);
    released_ = text_.size();
    return up;
  }
  const size_t safe_end = text_.size() - holdback();
  if (safe_end > released_) {
    up.text = text_.substr(released_, safe_end - released_);
    released_ = safe_end;
  }
  return up;
}

std::string StopChecker::finish() {
  std::string rest;
  if (released_ < text_.size()) rest = text_.substr(released_);
  released_ = text_.size();
  return rest;
}

}  // namespace qinfer::sampling
