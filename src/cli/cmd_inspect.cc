// qinfer inspect DIR: config summary, tensor counts by kind, dtypes, and the
// memory a run needs (weights as loaded, KV cache per token, state per sequence).
#include <cstdio>
#include <map>
#include <regex>

#include "cli/commands.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "cli/generation_flags.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "util/args.h"
#include "util/error.h"
#include "vision/vision_config.h"

namespace qinfer::cli {

namespace {

std::string human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  Args a(argc, argv, {{"model", true}, {"help", false}, {"memory-budget-gb", true}, {"max-model-len", true},
                      {"max-num-seqs", true}, {"experts", true}});
  if (a.has("help")) {
    std::fprintf(stderr,
                 "usage: qinfer inspect DIR (or --model DIR) [--memory-budget-gb G] [--max-model-len N]\n"
                 "                      [--max-num-seqs N] [--experts auto|resident|mapped]\n"
                 "Ends with the memory plan of each dense mode (bf16 copied, int8, mapped) on this machine\n"
                 "or under --memory-budget-gb, read from the tensor headers only.\n");
    return 0;
  }
  LoadOptions plan_opts = load_options_from_args(a);
  plan_opts.max_num_seqs = a.get_int("max-num-seqs", 1);
  if (plan_opts.max_num_seqs < 1) fail("option --max-num-seqs: must be positive");
  std::string dir = a.has("model") ? a.get("model") : (a.positional().empty() ? "" : a.positional()[0]);
  if (dir.empty()) fail("missing the model folder: qinfer inspect DIR");
  ModelConfig c = load_config(dir);
  auto ck = Checkpoint::open(dir);
  const TextConfig& t = c.text;

  std::printf("model        %s\n", dir.c_str());
  std::printf("architecture %s (model_type %s)\n", c.architecture.c_str(), c.model_type.c_str());
  std::printf("layers       %d (%d linear attention, %d full attention)\n", t.num_hidden_layers,
              t.num_hidden_layers - t.num_full_layers(), t.num_full_layers());
  std::printf("hidden       %d, vocab %d, max context %lld\n", t.hidden_size, t.vocab_size,
              static_cast<long long>(t.max_position_embeddings));
  std::printf("attention    %d heads, %d kv heads, head dim %d, rotary dim %d, theta %g\n", t.num_attention_heads,
              t.num_key_value_heads, t.head_dim, t.rotary_dim(), t.rope.theta);
  std::printf("deltanet     %d key heads x %d, %d value heads x %d, conv %d\n", t.linear_num_key_heads,
              t.linear_key_head_dim, t.linear_num_value_heads, t.linear_value_head_dim, t.linear_conv_kernel_dim);
  std::printf("moe          %d experts, top %d, intermediate %d, shared expert %d\n", t.num_experts,
              t.num_experts_per_tok, t.moe_intermediate_size, t.shared_expert_intermediate_size);
  if (c.quant.enabled)
    std::printf("quantization gptq %d-bit, group %d, %s, desc_act %s, zeros %s, %zu dynamic rules\n", c.quant.bits,
                c.quant.group_size, c.quant.sym ? "sym" : "asym", c.quant.desc_act ? "true" : "false",
                c.quant.v2_zeros ? "v2" : "v1", c.quant.dynamic.size());
  else
    std::printf("quantization none\n");

  // Tensor census.
  std::map<std::string, std::pair<int64_t, int64_t>> by_kind;  // kind -> (count, bytes)
  std::map<std::string, int64_t> by_dtype;
  int64_t gptq_modules = 0, text_bytes = 0, vision_params = 0, vision_bytes = 0;
  static const std::regex per_expert(R"(\.mlp\.experts\.\d+\.)");
  for (const auto& [name, info] : ck->all()) {
    std::string kind;
    bool text = true;
    if (name.rfind("model.visual.", 0) == 0) {
      kind = "vision", text = false;
      vision_params += info->numel();
      vision_bytes += static_cast<int64_t>(info->nbytes);
    }
    else if (name.rfind("mtp.", 0) == 0) kind = "mtp", text = false;
    else if (std::regex_search(name, per_expert)) kind = "experts (per expert)";
    else if (name.find(".mlp.experts.") != std::string::npos) kind = "experts (fused)";
    else if (name.find("embed_tokens") != std::string::npos || name == "lm_head.weight") kind = "embedding / lm_head";
    else if (name.find(".linear_attn.") != std::string::npos) kind = "deltanet";
    else if (name.find(".self_attn.") != std::string::npos) kind = "attention";
    else if (name.find(".shared_expert") != std::string::npos || name.find(".mlp.gate.") != std::string::npos) kind = "router / shared expert";
    else kind = "norms / other";
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".qweight") == 0) ++gptq_modules;
    by_kind[kind].first++;
    by_kind[kind].second += static_cast<int64_t>(info->nbytes);
    by_dtype[dtype_name(info->dtype)]++;
    if (text) text_bytes += static_cast<int64_t>(info->nbytes);
  }
  std::printf("\ntensors      %zu in %zu file(s), %s on disk\n", ck->all().size(), ck->files().size(),
              human(static_cast<double>(ck->total_bytes())).c_str());
  for (const auto& [kind, cb] : by_kind)
    std::printf("  %-24s %7lld tensors %12s\n", kind.c_str(), static_cast<long long>(cb.first), human(static_cast<double>(cb.second)).c_str());
  std::printf("  GPTQ modules             %7lld\n", static_cast<long long>(gptq_modules));
  std::printf("dtypes      ");
  for (const auto& [d, n] : by_dtype) std::printf(" %s %lld", d.c_str(), static_cast<long long>(n));
  std::printf("\n");

  if (c.has_vision && c.raw.contains("vision_config")) {
    const vision::VisionConfig v = vision::parse_vision_config(c.raw["vision_config"], dir + "/config.json");
    std::printf("vision       %d blocks, hidden %d, %d heads, mlp %d, patch %d, merge %dx%d -> %d\n", v.depth,
                v.hidden_size, v.num_heads, v.intermediate_size, v.patch_size, v.spatial_merge_size,
                v.spatial_merge_size, v.out_hidden_size);
    if (vision_params)
      std::printf("             %.1fM parameters, %s (loaded when present; serve --limit-mm-per-prompt '{\"image\": 0}' skips it)\n",
                  vision_params / 1e6, human(static_cast<double>(vision_bytes)).c_str());
    else
      std::printf("             no model.visual.* tensors in the checkpoint: text only\n");
  }
  // Memory: the text weights are mapped/repacked once; caches grow with context.
  const int64_t kv_per_token = 2LL * t.num_full_layers() * t.num_key_value_heads * t.head_dim * 2;  // bf16 K and V
  const int64_t nlin = t.num_hidden_layers - t.num_full_layers();
  const int64_t state = nlin * (1LL * t.linear_num_value_heads * t.linear_key_head_dim * t.linear_value_head_dim * 4 +
                                1LL * (2 * t.linear_num_key_heads * t.linear_key_head_dim +
                                       t.linear_num_value_heads * t.linear_value_head_dim) * (t.linear_conv_kernel_dim - 1) * 4);
  std::printf("\nmemory       text weights %s (MTP not loaded by default)\n", human(static_cast<double>(text_bytes)).c_str());
  std::printf("             KV cache %s per token, %s at full context; DeltaNet state %s per sequence\n",
              human(static_cast<double>(kv_per_token)).c_str(),
              human(static_cast<double>(kv_per_token) * static_cast<double>(t.max_position_embeddings)).c_str(),
              human(static_cast<double>(state)).c_str());
  std::printf("             one sequence at 4k context: %s in all\n",
              human(static_cast<double>(text_bytes + state + kv_per_token * 4096)).c_str());
  struct Mode {
    const char* name;
    bool int8, mapped, bf16c;
  };
  for (const Mode& m : {Mode{"--dense bf16", false, false, false}, Mode{"--dense bf16c", false, false, true},
                        Mode{"--dense int8", true, false, false}, Mode{"--mmap-dense", false, true, false}}) {
    LoadOptions o = plan_opts;
    o.dense_int8 = m.int8;
    o.dense_bf16c = m.bf16c ? 1 : 0;
    o.resident_dense = !m.mapped;
    const model::MemoryPlan p = model::plan_for_options(*ck, c, o);
    std::printf("%-14s %s\n", m.name, p.fits ? p.line().c_str() : p.refusal.c_str());
  }
  return 0;
}

}  // namespace qinfer::cli
