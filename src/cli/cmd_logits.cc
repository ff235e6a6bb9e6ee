// qinfer logits --model DIR --ids 3,1,4 --out FILE
// One prefill call over the ids; writes float32 little-endian logits
// [number of ids, vocab_size], row-major.
#include <cstdio>
#include <vector>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "model/model.h"
#include "util/args.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

int cmd_logits(int argc, char** argv) {
  Args a(argc, argv, {{"model", true}, {"ids", true}, {"out", true}, {"threads", true},
                      {"dense", true}, {"help", false}});
  if (a.has("help")) {
    std::fprintf(stderr, "usage: qinfer logits --model DIR --ids 3,1,4 --out FILE [--threads N] [--dense int8]\n"
                         "Writes float32 LE logits [n_ids, vocab_size] of one prefill call.\n");
    return 0;
  }
  std::vector<int> ids = parse_int_list(a.get("ids"), "--ids");
  std::string out = a.get("out");
  check_output_path(out, "--out");
  LoadOptions lo = load_options_from_args(a);
  auto model = Model::load(model_dir_from_args(a), lo);
  const int64_t vocab = model->config().text.vocab_size;
  std::vector<float> logits(ids.size() * static_cast<size_t>(vocab));
  auto state = model->new_sequence();
  Model::Step step;
  step.state = state.get();
  step.tokens = ids.data();
  step.n_tokens = static_cast<int64_t>(ids.size());
  step.logits = logits.data();
  step.all_logits = true;
  double t0 = now_seconds();
  model->forward({step});
  log_info("prefill of ", ids.size(), " tokens in ", now_seconds() - t0, " s");
  FILE* f = std::fopen(out.c_str(), "wb");
  if (!f) fail(out, ": cannot create");
  size_t n = std::fwrite(logits.data(), sizeof(float), logits.size(), f);
  if (std::fclose(f) != 0 || n != logits.size()) fail(out, ": write failed");
  return 0;
}

}  // namespace qinfer::cli
