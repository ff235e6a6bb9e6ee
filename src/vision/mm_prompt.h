// The text side of image prompts: each image's single <|image_pad|> expanded to
// its merged token count, and the 3-D mRoPE positions of transformers'
// get_rope_index (Qwen3_5MoeModel): text runs get cur..cur+n-1 on all three
// streams; an image with merged grid lh x lw gets (t, h, w) = (cur, cur+i, cur+j)
// for merged token (i, j) in row-major order, then cur += max(lh, lw).
// rope_delta = max(position) + 1 - L; a later token at index p gets position
// p + rope_delta on all three streams.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::vision {

struct ImageGrid {
  int64_t t = 1, h = 0, w = 0;   // patch grid (before the spatial merge)
};

struct MmPrompt {
  std::vector<int> ids;                          // expanded prompt
  std::vector<int64_t> positions;                // [L][3] (t, h, w)
  int64_t rope_delta = 0;
  std::vector<std::pair<int64_t, int64_t>> image_ranges;   // [begin, end) of each image's pads
};

// `ids` holds exactly one image_token_id per image (the chat template's form).
// Errors name `what` (e.g. "prompt") when the counts disagree.
MmPrompt expand_image_prompt(const std::vector<int>& ids, const std::vector<ImageGrid>& grids, int image_token_id,
                             int merge, const std::string& what = "prompt");

// get_rope_index over an already expanded prompt; `image_token_id` marks image rows.
MmPrompt rope_index(const std::vector<int>& expanded_ids, const std::vector<ImageGrid>& grids, int image_token_id,
                    int merge, const std::string& what = "prompt");

}  // namespace qinfer::vision
