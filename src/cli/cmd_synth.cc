// qinfer synth: write a synthetic checkpoint (random weights, real layout).
#include <cstdio>

#include "cli/commands.h"
#include "io/synthetic_checkpoint.h"
#include "util/args.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

int cmd_synth(int argc, char** argv) {
  Args a(argc, argv, {{"out", true}, {"layers", true}, {"experts", true}, {"experts-per-tok", true},
                      {"hidden", true}, {"vocab", true}, {"moe-intermediate", true}, {"group-size", true},
                      {"seed", true}, {"bf16", false}, {"mtp", false}, {"demo", false}, {"tokenizer", true},
                      {"shard-mb", true}, {"vision", false}, {"help", false}});
  if (a.has("help")) {
    std::fprintf(stderr,
                 "usage: qinfer synth --out DIR [--layers N] [--experts E] [--experts-per-tok K] [--hidden H]\n"
                 "                    [--vocab V] [--moe-intermediate I] [--group-size G] [--seed S]\n"
                 "                    [--bf16] [--mtp] [--vision] [--shard-mb MB] [--demo --tokenizer DIR]\n"
                 "Random weights in the real Qwen3.6-35B-A3B layout; real dimensions unless overridden.\n"
                 "--bf16 writes fused BF16 experts instead of per-expert GPTQ int4. --demo writes the\n"
                 "small bundled demo model and copies the tokenizer files from --tokenizer. --vision adds a\n"
                 "random vision tower (model.visual.*, the real 27 blocks; with --demo a tiny one) and a\n"
                 "preprocessor_config.json.\n");
    return 0;
  }
  SynthOptions o = a.has("demo") ? demo_synth_options() : SynthOptions();
  o.layers = static_cast<int>(a.get_int("layers", o.layers));
  o.experts = static_cast<int>(a.get_int("experts", o.experts));
  o.experts_per_tok = static_cast<int>(a.get_int("experts-per-tok", std::min(o.experts_per_tok, o.experts)));
  o.hidden = static_cast<int>(a.get_int("hidden", o.hidden));
  o.vocab = static_cast<int>(a.get_int("vocab", o.vocab));
  o.moe_intermediate = static_cast<int>(a.get_int("moe-intermediate", o.moe_intermediate));
  o.shared_intermediate = o.moe_intermediate;
  o.group_size = static_cast<int>(a.get_int("group-size", o.group_size));
  o.seed = static_cast<uint64_t>(a.get_int("seed", 1));
  o.gptq = !a.has("bf16");
  o.mtp = a.has("mtp");
  o.shard_bytes = a.get_int("shard-mb", 4096) << 20;
  o.tokenizer_dir = a.get_or("tokenizer", "");
  if (a.has("vision")) enable_synth_vision(o, a.has("demo"));
  if (a.has("demo") && o.tokenizer_dir.empty()) fail("--demo needs --tokenizer DIR (the Qwen3.5 tokenizer files)");
  std::string out = a.get("out");
  double t0 = now_seconds();
  int64_t bytes = write_synthetic_checkpoint(out, o);
  log_info("wrote ", out, ": ", bytes / 1000000, " MB of weights in ", static_cast<int>(now_seconds() - t0), " s");
  return 0;
}

}  // namespace qinfer::cli
