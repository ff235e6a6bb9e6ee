#include "sampling/sampling_params.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "util/error.h"

namespace qinfer::sampling {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void require_finite(const char* field, float v) {
  if (!std::isfinite(v)) fail("sampling parameter ", field, ": must be a finite number, got ", num(v));
}

}  // namespace

void SamplingParams::validate(int32_t vocab_size) const {
  require_finite("temperature", temperature);
  if (temperature < 0.0f)
    fail("sampling parameter temperature: must be non-negative, got ", num(temperature));
  require_finite("top_p", top_p);
  if (!(top_p > 0.0f && top_p <= 1.0f))
    fail("sampling parameter top_p: must be in (0, 1], got ", num(top_p));
  if (top_k < -1)
    fail("sampling parameter top_k: must be 0 or -1 (disabled), or at least 1, got ", top_k);
  require_finite("min_p", min_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    fail("sampling parameter min_p: must be in [0, 1], got ", num(min_p));
  require_finite("repetition_penalty", repetition_penalty);
  if (!(repetition_penalty > 0.0f))
    fail("sampling parameter repetition_penalty: must be greater than zero, got ",
         num(repetition_penalty));
  require_finite("presence_penalty", presence_penalty);
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
    fail("sampling parameter presence_penalty: must be in [-2, 2], got ", num(presence_penalty));
  require_finite("frequency_penalty", frequency_penalty);
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
    fail("sampling parameter frequency_penalty: must be in [-2, 2], got ", num(frequency_penalty));
  if (top_logprobs < -1 || top_logprobs > kMaxTopLogprobs)
    fail("sampling parameter top_logprobs: must be between 0 and ", kMaxTopLogprobs, ", got ",
         top_logprobs);
  for (const auto& [tok, bias] : logit_bias) {
    if (tok < 0 || tok >= vocab_size)
      fail("sampling parameter logit_bias: token id ", tok, " is out of range [0, ", vocab_size, ")");
    if (std::isnan(bias))
      fail("sampling parameter logit_bias[", tok, "]: must be a number");
  }
}

}  // namespace qinfer::sampling
