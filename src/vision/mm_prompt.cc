#include "vision/mm_prompt.h"

#include <algorithm>

#include "util/error.h"

namespace qinfer::vision {

MmPrompt expand_image_prompt(const std::vector<int>& ids, const std::vector<ImageGrid>& grids, int image_token_id,
                             int merge, const std::string& what) {
  const int64_t pads = std::count(ids.begin(), ids.end(), image_token_id);
  if (pads != static_cast<int64_t>(grids.size()))
    fail(what, ": holds ", pads, " image placeholder token(s) (id ", image_token_id, ") but ", grids.size(),
         " image(s) were given; each image needs exactly one placeholder");
  std::vector<int> out;
  size_t k = 0;
  for (int id : ids) {
    if (id != image_token_id) {
      out.push_back(id);
      continue;
    }
    const ImageGrid& g = grids[k++];
    const int64_t n = g.t * (g.h / merge) * (g.w / merge);
    out.insert(out.end(), static_cast<size_t>(n), image_token_id);
  }
  return rope_index(out, grids, image_token_id, merge, what);
}

MmPrompt rope_index(const std::vector<int>& ids, const std::vector<ImageGrid>& grids, int image_token_id, int merge,
                    const std::string& what) {
  MmPrompt p;
  p.ids = ids;
  const int64_t L = static_cast<int64_t>(ids.size());
  p.positions.resize(L * 3);
  int64_t cur = 0, i = 0, max_pos = -1;
  size_t img = 0;
  while (i < L) {
    if (ids[i] != image_token_id) {
      for (int k = 0; k < 3; ++k) p.positions[i * 3 + k] = cur;
      max_pos = std::max(max_pos, cur);
      ++cur;
      ++i;
      continue;
    }
    if (img >= grids.size()) fail(what, ": more image token runs than images (", grids.size(), ")");
    const ImageGrid& g = grids[img++];
    if (g.h % merge || g.w % merge || g.t < 1)
      fail(what, ": image ", img - 1, " has a grid ", g.t, "x", g.h, "x", g.w, " not divisible by the merge size ", merge);
    const int64_t lh = g.h / merge, lw = g.w / merge, n = g.t * lh * lw;
    if (i + n > L || std::count(ids.begin() + i, ids.begin() + i + n, image_token_id) != n)
      fail(what, ": image ", img - 1, " needs ", n, " consecutive image tokens at index ", i);
    p.image_ranges.push_back({i, i + n});
    for (int64_t t = 0; t < g.t; ++t)
      for (int64_t a = 0; a < lh; ++a)
        for (int64_t b = 0; b < lw; ++b, ++i) {
          // Images: the temporal index is the same (t * 0 step) for every frame of a still image.
          p.positions[i * 3 + 0] = cur + t;
          p.positions[i * 3 + 1] = cur + a;
          p.positions[i * 3 + 2] = cur + b;
          max_pos = std::max({max_pos, cur + t, cur + a, cur + b});
        }
    cur += std::max(lh, lw);
  }
  if (img != grids.size()) fail(what, ": ", grids.size(), " images given but only ", img, " image token runs found");
  p.rope_delta = max_pos + 1 - L;
  return p;
}

}  // namespace qinfer::vision
