// StopChecker: stop strings over incrementally decoded output text, as vLLM's detokenizer
// does it. Each push() appends newly decoded text and returns the part that is safe to stream:
// text that could still turn out to be the beginning of a stop string is held back until it
// is resolved. On a match the output is cut at the stop string's start (or its end with
// include_stop_str_in_output) and the checker reports which string matched and where.
// Matching rule (vLLM check_stop_strings): stop strings are tried in the order given; the
// first one found in the newly searchable region wins, at its first occurrence there.
// Offsets are byte offsets into the UTF-8 output text.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::sampling {

class StopChecker {
 public:
  struct Update {
    std::string text;               // newly releasable text (may be empty)
    bool stopped = false;           // a stop string matched; generation must end
    std::string stop_str;           // the matched stop string (vLLM's stop_reason)
    std::optional<size_t> cut;      // byte offset in the full output where it was truncated
  };

  // Throws qinfer::Error for an empty stop string.
  explicit StopChecker(std::vector<std::string> stop, bool include_stop_str_in_output = false);

  // Appends delta to the output text. After a stop, further pushes are ignored.
  Update push(std::string_view delta);
  // End of generation without a stop: releases any held-back text.
  std::string finish();

  // The output so far (after a stop: truncated as reported).
  const std::string& text() const { return text_; }
  bool stopped() const { return stopped_; }
  bool empty() const { return stop_.empty(); }

 private:
  size_t holdback() const;

  std::vector<std::string> stop_;
  bool include_;
  std::string text_;
  size_t released_ = 0;
  bool stopped_ = false;
};

}  // namespace qinfer::sampling
