// vLLM's prompt_logprobs for one prompt position: the log-softmax of the unmodified logits
// row that predicts prompt token `target`, giving its logprob and rank and the top_n most
// likely tokens (best first, lower id on ties). Rows are read over ids [0, vocab) only.
#pragma once
#include "engine/gen_params.h"

namespace qinfer::engine {

TokenOut prompt_token_logprob(const float* row, int vocab, int target, int top_n);

}  // namespace qinfer::engine
