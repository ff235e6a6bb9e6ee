// qinfer logits --model DIR --ids 3,1,4 --out FILE [--mtp-out FILE2] [--image FILE ...]
// One prefill call over the ids; writes float32 little-endian logits
// [number of ids, vocab_size], row-major. --mtp-out also writes the MTP draft head's
// logits [n, vocab]: row i from the main model's post-norm hidden state at position i
// and the next token ids[i+1] (last row: the argmax of the main logits at the last
// position), rotary position i, causal over rows 0..i (the fixtures' mtp_logits).
// With --image, the ids hold ONE image_token_id per image (between vision_start and
// vision_end, in the order of the --image flags); each is expanded to the image's merged
// token count, so the file has [expanded length, vocab_size] rows.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "cli/image_flags.h"
#include "model/model.h"
#include "util/args.h"
#include "util/error.h"
#include "util/log.h"
#include "vision/mm_prompt.h"
#include "vision/vision_tower.h"

namespace qinfer::cli {

namespace {
void write_f32(const std::string& path, const std::vector<float>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, ": cannot create");
  size_t n = std::fwrite(v.data(), sizeof(float), v.size(), f);
  if (std::fclose(f) != 0 || n != v.size()) fail(path, ": write failed");
}
}  // namespace

int cmd_logits(int argc, char** argv) {
  Args a(argc, argv, {{"model", true}, {"ids", true}, {"out", true}, {"threads", true},
                      {"dense", true}, {"image", true, true}, {"help", false}, {"mtp-out", true},
                      {"memory-budget-gb", true}, {"experts", true}});
  if (a.has("help")) {
    std::fprintf(stderr, "usage: qinfer logits --model DIR --ids 3,1,4 --out FILE [--mtp-out FILE2] [--image FILE ...] [--threads N] [--dense auto|bf16|bf16c|int8]\n"
                         "Writes float32 LE logits [n_ids, vocab_size] of one prefill call; --mtp-out also the\n"
                         "MTP head's [n_ids, vocab_size] (row i: hidden i, token ids[i+1], last row the argmax).\n"
                         "With --image the ids hold one image_token_id per image; rows are [expanded length, vocab_size].\n%s",
                 memory_flags_help());
    return 0;
  }
  std::vector<int> ids = parse_int_list(a.get("ids"), "--ids");
  std::string out = a.get("out");
  check_output_path(out, "--out");
  LoadOptions lo = load_options_from_args(a);
  if (!a.has("image")) lo.max_model_len = static_cast<int64_t>(ids.size());   // the KV one call needs
  const bool mtp = a.has("mtp-out");
  if (mtp) check_output_path(a.get("mtp-out"), "--mtp-out");
  if (mtp && a.has("image")) fail("--mtp-out: the MTP rows use text positions; it cannot be combined with --image");
  lo.load_mtp = mtp;
  const std::string dir = model_dir_from_args(a);
  ImageList images = load_images(a.get_all("image"), dir);   // before the slow load
  auto model = Model::load(dir, lo);
  if (mtp && !model->has_mtp()) fail(dir, ": --mtp-out needs the MTP head, but the checkpoint has no mtp.* tensors");
  const int64_t vocab = model->config().text.vocab_size;
  // Images: expanded ids, mRoPE positions and one embedding row per image token.
  vision::MmPrompt mm;
  std::vector<float> embeds;
  std::vector<const float*> rows;
  if (images) {
    if (!model->vision()) fail("--image: ", dir, " has no vision tower (no model.visual.* tensors)");
    std::vector<vision::ImageGrid> grids;
    std::vector<const vision::ImagePatches*> ptrs;
    for (const auto& im : *images) {
      grids.push_back({im.grid_t, im.grid_h, im.grid_w});
      ptrs.push_back(&im);
    }
    mm = vision::expand_image_prompt(ids, grids, model->config().image_token_id,
                                     model->vision()->config().spatial_merge_size, "--ids");
    ids = mm.ids;
    double tv = now_seconds();
    embeds = model->encode_images(ptrs);
    log_info("vision tower: ", images->size(), " image(s) in ", now_seconds() - tv, " s");
    const int64_t H = model->config().text.hidden_size;
    rows.assign(ids.size(), nullptr);
    int64_t k = 0;
    for (auto [b, e] : mm.image_ranges)
      for (int64_t t = b; t < e; ++t) rows[t] = embeds.data() + (k++) * H;
  }
  std::vector<float> logits(ids.size() * static_cast<size_t>(vocab));
  auto state = model->new_sequence();
  Model::Step step;
  step.state = state.get();
  step.tokens = ids.data();
  step.n_tokens = static_cast<int64_t>(ids.size());
  step.logits = logits.data();
  step.all_logits = true;
  const int64_t T = static_cast<int64_t>(ids.size()), H = model->config().text.hidden_size;
  std::vector<float> hidden(mtp ? T * H : 0);
  if (mtp) step.hidden = hidden.data();
  if (images) {
    step.embed_rows = rows.data();
    step.mrope_pos = mm.positions.data();
  }
  double t0 = now_seconds();
  model->forward({step});
  log_info("prefill of ", ids.size(), " tokens in ", now_seconds() - t0, " s");
  write_f32(out, logits);
  if (mtp) {
    std::vector<int> next(ids.begin() + 1, ids.end());
    const float* last = logits.data() + (T - 1) * vocab;
    next.push_back(static_cast<int>(std::max_element(last, last + vocab) - last));   // lowest id on ties
    std::vector<float> mlog(logits.size());
    Model::MtpStep ms;
    ms.state = state.get();
    ms.next_tokens = next.data();
    ms.hidden = hidden.data();
    ms.n = T;
    ms.logits = mlog.data();
    ms.all_logits = true;
    model->forward_mtp({ms});
    write_f32(a.get("mtp-out"), mlog);
  }
  return 0;
}

}  // namespace qinfer::cli
