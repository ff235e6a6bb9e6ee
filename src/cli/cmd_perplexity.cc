// qinfer perplexity --model DIR --file TEXT [--ctx 2048] [--stride 512]
// Perplexity by the Hugging Face fixed-length recipe (docs/MODEL.md §9):
// windows of --ctx tokens starting every --stride tokens; each window scores only
// the tokens no earlier window scored; PPL = exp(token-weighted mean NLL).
// --hf-rows joins the file's lines with "\n\n" (how `datasets` rows of
// wikitext-2-raw-v1 are joined); --ids scores a given id list instead of text.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/args.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {

std::string read_text(const std::string& path, bool hf_rows) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  if (!hf_rows) {
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string line, out;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) out += "\n\n";
    out += line;
    first = false;
  }
  return out;
}

// -log softmax(row)[target], in double.
double nll(const float* row, int64_t vocab, int target) {
  double mx = row[0];
  for (int64_t i = 1; i < vocab; ++i) mx = std::max(mx, static_cast<double>(row[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(row[i] - mx);
  return std::log(sum) + mx - row[target];
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
  Args a(argc, argv, {{"model", true}, {"file", true}, {"ids", true}, {"ctx", true}, {"stride", true},
                      {"max-tokens", true}, {"hf-rows", false}, {"threads", true}, {"dense", true}, {"help", false},
                      {"memory-budget-gb", true}, {"experts", true}});
  if (a.has("help")) {
    std::fprintf(stderr,
                 "usage: qinfer perplexity --model DIR (--file TEXT [--hf-rows] | --ids 1,2,3) [--ctx 2048]\n"
                 "                         [--stride 512] [--max-tokens N] [--threads N] [--dense auto|bf16|bf16c|int8]\n"
                 "wikitext-2 as the model cards measure it: --file wiki.test.raw --hf-rows --ctx 2048 --stride 512\n"
                 "  --memory-budget-gb G  --experts auto|resident|mapped (the memory plan; KV sized for --ctx)\n");
    return 0;
  }
  const int64_t ctx = a.get_int("ctx", 2048), stride = a.get_int("stride", 512);
  if (ctx < 2) fail("--ctx must be at least 2");
  if (stride < 1 || stride > ctx) fail("--stride must be in 1..--ctx");
  if (a.has("file") == a.has("ids")) fail("give exactly one of --file or --ids");
  LoadOptions lo = load_options_from_args(a);
  lo.max_model_len = ctx;   // one window at a time
  const std::string dir = model_dir_from_args(a);

  std::vector<int> ids;
  if (a.has("ids")) {
    ids = parse_int_list(a.get("ids"), "--ids");
  } else {
    Tokenizer tok = Tokenizer::load(dir);
    ids = tok.encode(read_text(a.get("file"), a.has("hf-rows")), /*parse_special=*/false);
  }
  if (a.has("max-tokens") && static_cast<int64_t>(ids.size()) > a.get_int("max-tokens", 0))
    ids.resize(static_cast<size_t>(a.get_int("max-tokens", 0)));
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T < 2) fail("perplexity needs at least 2 tokens, got ", T);
  auto model = Model::load(dir, lo);
  if (ctx > model->max_context()) fail("--ctx ", ctx, " exceeds the model's context of ", model->max_context());
  const int64_t vocab = model->config().text.vocab_size;

  int64_t windows = 0;
  for (int64_t b = 0;; b += stride) {
    ++windows;
    if (std::min(b + ctx, T) >= T) break;
  }
  log_info("perplexity over ", T, " tokens: ", windows, " windows of ", ctx, ", stride ", stride);
  Progress progress("perplexity windows", windows);
  double total_nll = 0;
  int64_t scored = 0, prev_end = 0, w = 0;
  std::vector<float> logits;
  for (int64_t b = 0;; b += stride) {
    const int64_t e = std::min(b + ctx, T), n = e - b;
    logits.resize(static_cast<size_t>(n * vocab));
    auto state = model->new_sequence();
    model->forward({{state.get(), ids.data() + b, n, logits.data(), true}});
    // Targets: positions [max(prev_end, b+1), e), each predicted by the row before it.
    for (int64_t t = std::max(prev_end, b + 1); t < e; ++t) {
      total_nll += nll(&logits[static_cast<size_t>((t - b - 1) * vocab)], vocab, ids[static_cast<size_t>(t)]);
      ++scored;
    }
    prev_end = e;
    progress.update(++w);
    if (e >= T) break;
  }
  progress.finish();
  const double mean = total_nll / static_cast<double>(scored);
  std::printf("tokens %lld scored %lld windows %lld mean_nll %.6f ppl %.4f\n", static_cast<long long>(T),
              static_cast<long long>(scored), static_cast<long long>(windows), mean, std::exp(mean));
  return 0;
}

}  // namespace qinfer::cli
