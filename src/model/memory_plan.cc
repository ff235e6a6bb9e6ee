#include "model/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/layers.h"
#include "model/model.h"
#include "util/error.h"
#include "util/log.h"
#include "util/system_memory.h"

namespace qinfer::model {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool contains(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// Matrices the loader keeps as stored even under --dense int8 (WeightReader::linear's `quantizable`).
bool kept_as_stored(const std::string& n) {
  return ends_with(n, ".mlp.gate.weight") || ends_with(n, "shared_expert_gate.weight") ||
         ends_with(n, "in_proj_a.weight") || ends_with(n, "in_proj_b.weight");
}

// A matrix (or a stack of them: fused experts) re-encoded as int8 codes + an fp32 scale per row.
double int8_bytes(const TensorInfo& t) {
  const double n = static_cast<double>(t.numel());
  return n + 4.0 * n / static_cast<double>(t.shape.back());
}

std::string gb(double b) {
  char s[32];
  if (b < 1e8) std::snprintf(s, sizeof s, "%.1f MB", b / 1e6);
  else std::snprintf(s, sizeof s, "%.2f GB", b / 1e9);
  return s;
}

struct Weights {
  double copied = 0, reencoded = 0, bf16c = 0, mapped = 0, experts = 0;
};

// Where the weights go for the request's dense options; experts counted apart.
Weights place_weights(const WeightCensus& w, bool int8, bool mtp_int8, bool mmap_dense, bool bf16c) {
  Weights p;
  if (int8) {
    p.reencoded = w.dense_int8 + w.lm_head_int8;
    p.copied = p.reencoded + w.small;
  } else if (mmap_dense) {
    p.copied = w.small;
    p.mapped = w.dense + w.lm_head;
  } else if (bf16c) {   // a tied lm_head gets its own 12-bit copy (the embedding is read by rows)
    p.bf16c = (w.dense + w.lm_head) * kBf16cPlanShare;
    p.copied = p.bf16c + w.small;
  } else {
    p.copied = w.dense + w.small + (w.lm_head_tied ? 0 : w.lm_head);
    if (w.lm_head_tied) p.mapped = w.lm_head;   // an lm_head that borrows the embedding stays mapped
  }
  p.copied += int8 || mtp_int8 ? w.mtp_int8 : w.mtp;
  p.mapped += w.vision;
  return p;
}

double kv_bytes(const StateCensus& s, int64_t len, int64_t seqs) {
  const double blocks = std::ceil(static_cast<double>(len) / static_cast<double>(KvCache::kBlockTokens));
  return static_cast<double>(seqs) *
         (blocks * static_cast<double>(KvCache::kBlockTokens) * s.kv_per_token + s.per_sequence);
}

// The longest context (a multiple of the KV block, capped at the model's) whose KV
// fits in `room` bytes for `seqs` sequences; 0 when not even one block fits.
int64_t longest_fitting(const StateCensus& s, double room, int64_t seqs) {
  const double per_block = static_cast<double>(seqs) * s.kv_per_token * KvCache::kBlockTokens;
  room -= static_cast<double>(seqs) * s.per_sequence;
  if (room <= 0) return 0;
  if (per_block <= 0) return s.model_max_len;
  const double blocks = std::floor(room / per_block);
  return std::min<int64_t>(s.model_max_len, static_cast<int64_t>(std::min(blocks, 1e15)) * KvCache::kBlockTokens);
}

// One attempt: the request as given (len already decided), experts resident or file-backed.
MemoryPlan attempt(const WeightCensus& w, const StateCensus& s, const PlanRequest& req, int64_t len,
                   bool file_backed) {
  MemoryPlan p;
  p.req = req;
  const Weights pl = place_weights(w, req.dense_int8, req.mtp_int8, req.mmap_dense, req.dense_bf16c);
  p.copied = pl.copied + req.draft_head;
  p.reencoded = pl.reencoded;
  p.bf16c = pl.bf16c;
  p.draft_head = req.draft_head;
  p.mapped = pl.mapped;
  p.max_model_len = len;
  p.kv = kv_bytes(s, len, req.max_num_seqs);
  p.reserve = s.reserve;
  p.cache = req.cache;
  const double rest = p.copied + p.mapped + p.kv + p.cache + p.reserve;
  if (file_backed) {
    p.experts_file_backed = true;
    p.experts_gptq = w.experts_gptq;
    p.experts_hot = std::clamp(req.budget - rest, 0.0, w.experts);
    p.experts_cold = w.experts - p.experts_hot;
    p.copied += p.experts_hot;
  } else if (req.mmap_dense && !w.experts_gptq) {
    p.mapped += w.experts;   // dense experts are views into the mapping without the resident copy
  } else {
    p.copied += w.experts;
  }
  p.need = p.copied + p.mapped + p.kv + p.cache + p.reserve;
  p.fits = file_backed ? rest <= req.budget : p.need <= req.budget;
  return p;
}

MemoryPlan plan_for(const WeightCensus& w, const StateCensus& s, const PlanRequest& req) {
  const bool can_file_back = w.experts > 0;
  const bool file_backed_only = req.experts == ExpertsPlacement::kFileBacked;
  const int64_t model_len = std::max<int64_t>(1, s.model_max_len);
  const int64_t min_len = std::min(model_len, kMinPlannedLen);
  int64_t len = req.max_model_len > 0 ? req.max_model_len : model_len;
  if (!file_backed_only) {
    MemoryPlan p = attempt(w, s, req, len, false);
    if (!p.fits && req.max_model_len <= 0) {   // not given: lower the context to what fits
      const double room = (req.budget - (p.need - p.kv)) * (1.0 - std::clamp(req.cache_share, 0.0, 0.9));
      const int64_t fit = longest_fitting(s, room, req.max_num_seqs);
      // Lowered to what fits, or (nothing fits) to the least the plan lowers to, so a
      // refusal reports the smallest need rather than the model's whole context.
      p = attempt(w, s, req, std::max(fit, min_len), false);
      p.len_lowered = std::max(fit, min_len) < model_len;
    }
    if (p.fits || req.experts == ExpertsPlacement::kResident || !can_file_back) return p;
    if (req.max_model_len <= 0) len = min_len;
  }
  MemoryPlan p = attempt(w, s, req, len, true);
  p.len_lowered = req.max_model_len <= 0 && len < model_len;
  return p;
}

}  // namespace

ExpertsPlacement parse_experts_placement(const std::string& e) {
  if (e == "auto") return ExpertsPlacement::kAuto;
  if (e == "resident") return ExpertsPlacement::kResident;
  if (e == "mapped") return ExpertsPlacement::kFileBacked;
  fail("option --experts: must be auto, resident or mapped, got '", e, "'");
}

WeightCensus census_of(const Checkpoint& ck, const ModelConfig& cfg, bool load_mtp, bool load_vision) {
  WeightCensus w;
  const TextConfig& tc = cfg.text;
  w.expert_count = static_cast<int64_t>(tc.num_hidden_layers) * tc.num_experts;
  bool has_lm_head = false;
  for (const auto& [name, tp] : ck.all()) {
    const TensorInfo& t = *tp;
    const double b = static_cast<double>(t.nbytes);
    const bool gptq_leaf = ends_with(name, ".qweight") || ends_with(name, ".qzeros") || ends_with(name, ".scales") ||
                           ends_with(name, ".g_idx");
    if (starts_with(name, "model.visual.")) {
      if (load_vision && cfg.has_vision) w.vision += b;
    } else if (starts_with(name, "mtp.")) {
      if (load_mtp && tc.mtp_num_hidden_layers > 0) {
        w.mtp += b;
        // Re-encoded: 2-D matrices and 3-D fused expert stacks.
        const bool matrix = (t.shape.size() == 2 || t.shape.size() == 3) && !kept_as_stored(name);
        w.mtp_int8 += matrix ? int8_bytes(t) : b;
      }
    } else if (ends_with(name, "embed_tokens.weight")) {
      w.embed += b;
      if (t.shape.size() == 2) w.lm_head_int8 = std::max(w.lm_head_int8, int8_bytes(t));
    } else if (starts_with(name, "lm_head.")) {
      has_lm_head = true;
      w.lm_head += b;
      if (name == "lm_head.weight" && t.shape.size() == 2) w.lm_head_int8 = int8_bytes(t);
      else w.lm_head_int8 = w.lm_head;
    } else if (contains(name, ".mlp.experts.")) {
      // Repacked GPTQ: codes as qweight, fp16 scales as stored, zero points at most a
      // byte each (twice the packed qzeros), no g_idx.
      if (gptq_leaf) {
        w.experts_gptq = true;
        if (ends_with(name, ".qzeros")) w.experts += 2 * b;
        else if (!ends_with(name, ".g_idx")) w.experts += b;
      } else {
        w.experts += b;
      }
    } else if (gptq_leaf) {
      w.small += b;
    } else if (t.shape.size() == 2 && !kept_as_stored(name)) {
      w.dense += b;
      w.dense_int8 += int8_bytes(t);
    } else if (t.shape.size() == 2) {
      w.small += b;
    } else {
      w.small += 4.0 * static_cast<double>(t.numel());   // norms, conv, A_log, dt_bias: fp32 copies
    }
  }
  if (!has_lm_head && tc.tie_word_embeddings) {
    w.lm_head_tied = true;
    w.lm_head = w.embed;
  } else if (!has_lm_head) {
    w.lm_head_int8 = 0;
  }
  return w;
}

StateCensus state_census(const StateShape& sh, int64_t model_max_len, int64_t hidden) {
  StateCensus s;
  s.reserve = 32.0 * (1 << 20) + 512.0 * 32.0 * static_cast<double>(hidden) * sizeof(float);
  s.kv_per_token = 2.0 * (sh.num_full_layers + sh.num_mtp_layers) * static_cast<double>(sh.kv_width) * sizeof(float);
  s.per_sequence = static_cast<double>(sh.num_linear_layers) *
                   static_cast<double>(sh.conv_rows * sh.conv_dim + sh.ssm_size) * sizeof(float);
  if (sh.num_mtp_layers > 0) {
    // A speculating sequence's verify buffers (DeltaNetState::spec_*), for the most
    // tokens a step verifies: 1 + num_speculative_tokens.
    constexpr int64_t kVerifyTokens = 1 + Model::kMaxDraftTokens;
    const int64_t kv = sh.key_heads * sh.key_dim + sh.value_heads * sh.value_dim;
    s.per_sequence += static_cast<double>(sh.num_linear_layers) *
                      static_cast<double>(sh.ssm_size + kVerifyTokens * (kv + 2 * sh.value_heads) +
                                          (sh.conv_rows + kVerifyTokens) * sh.conv_dim) * sizeof(float);
  }
  s.model_max_len = model_max_len;
  return s;
}

MemoryPlan plan_memory(const WeightCensus& w, const StateCensus& s, const PlanRequest& req) {
  if (req.max_num_seqs < 1) fail("memory plan: max_num_seqs must be at least 1");
  MemoryPlan p = plan_for(w, s, req);
  if (p.fits) return p;
  // What would fit, one flag at a time.
  std::string alts;
  auto add = [&](const std::string& a) { alts += (alts.empty() ? "" : ", ") + a; };
  if (!req.dense_int8 && !req.dense_bf16c) {
    PlanRequest r = req;
    r.dense_bf16c = true;
    r.mmap_dense = false;
    const MemoryPlan q = plan_for(w, s, r);
    if (q.fits) add("--dense bf16c (lossless, needs at most " + gb(q.need) + ")");
  }
  if (!req.dense_int8) {
    PlanRequest r = req;
    r.dense_bf16c = false;
    r.dense_int8 = true;
    r.mmap_dense = false;
    const MemoryPlan q = plan_for(w, s, r);
    if (q.fits) add("--dense int8 (needs " + gb(q.need) + ")");
  }
  if (req.experts == ExpertsPlacement::kResident && w.experts > 0) {
    PlanRequest r = req;
    r.experts = ExpertsPlacement::kAuto;
    const MemoryPlan q = plan_for(w, s, r);
    if (q.fits) add("--experts auto (experts file-backed, " + gb(q.experts_hot) + " of them resident)");
  }
  const double no_kv = p.need - p.kv - (p.experts_file_backed ? p.experts_hot : 0);
  const int64_t fit_len = longest_fitting(s, req.budget - no_kv, req.max_num_seqs);
  if (fit_len > 0 && fit_len < p.max_model_len) add("--max-model-len " + std::to_string(fit_len));
  if (req.max_num_seqs > 1) {
    int64_t seqs = 0;
    for (int64_t n = req.max_num_seqs - 1; n >= 1 && seqs == 0; n = n > 64 ? n / 2 : n - 1)
      if (no_kv + kv_bytes(s, p.max_model_len, n) <= req.budget) seqs = n;
    if (seqs > 0) add("--max-num-seqs " + std::to_string(seqs));
  }
  const double need_min = p.experts_file_backed ? no_kv + p.kv : p.need;
  char budget_flag[64];
  std::snprintf(budget_flag, sizeof budget_flag, "--memory-budget-gb %.3f", std::ceil(need_min / 1e6) / 1000);
  if (req.budget_given) add(std::string(budget_flag) + " (if the machine has it)");
  p.refusal = "memory plan: the model needs " + gb(need_min) + " (" + gb(p.copied) + " copied" +
              (p.reencoded > 0 ? " of which " + gb(p.reencoded) + " int8 re-encoded" : "") +
              (p.draft_head > 0 ? ", " + gb(p.draft_head) + " the MTP drafts' int8 lm_head" : "") + ", " + gb(p.mapped) +
              " mapped, KV/state " + gb(p.kv) + " for " + std::to_string(req.max_num_seqs) + " x " +
              std::to_string(p.max_model_len) + " tokens, " +
              (p.cache > 0 ? "prefix cache " + gb(p.cache) + " (--prefix-cache-gb), " : std::string()) + "reserve " +
              gb(p.reserve) + ") but the budget is " +
              gb(req.budget) + (req.budget_given ? " (--memory-budget-gb)" : " (what the system has available)") +
              "; " + (alts.empty() ? "nothing fits with one flag changed: free memory or give a larger " +
                                         std::string(budget_flag)
                                   : "what would fit: " + alts);
  return p;
}

std::string MemoryPlan::line() const {
  std::string s = "memory plan: budget " +
                  (req.budget >= 1e299 ? std::string("unknown (no MemAvailable, no cgroup limit)")
                                       : gb(req.budget) + (req.budget_given ? " (--memory-budget-gb)" : " (available)")) +
                  "; copied " + gb(copied);
  if (reencoded > 0 || draft_head > 0 || bf16c > 0) {
    s += " (";
    if (bf16c > 0) s += "12-bit BF16 at most " + gb(bf16c) + (draft_head > 0 ? ", " : "");
    if (reencoded > 0) s += "int8 re-encoded " + gb(reencoded) + (draft_head > 0 ? ", " : "");
    if (draft_head > 0) s += "MTP drafts' int8 lm_head " + gb(draft_head);
    s += ")";
  }
  s += ", mapped " + gb(mapped);
  if (experts_file_backed)
    s += ", experts file-backed" + std::string(experts_gptq ? " (GPTQ: hot repacked resident, cold repacked per call)" : "") +
         ": " + gb(experts_hot) + " hot resident, " + gb(experts_cold) + " cold";
  s += "; KV/state " + gb(kv) + " for " + std::to_string(req.max_num_seqs) + " x " + std::to_string(max_model_len) +
       " tokens" +
       (len_lowered ? cat(" (context lowered to fit",
                          req.cache_share > 0 ? cat(", ", static_cast<int>(req.cache_share * 100 + 0.5),
                                                    "% of the room left for the prefix cache")
                                              : std::string(),
                          "; --max-model-len to choose)")
                    : std::string()) +
       (cache > 0 ? "; prefix cache " + gb(cache) : std::string()) + "; needs " +
       gb(experts_file_backed ? need - experts_hot : need) + (fits ? "" : ": does not fit");
  return s;
}

MemoryPlan plan_for_options(const Checkpoint& ck, const ModelConfig& cfg, const LoadOptions& opts) {
  PlanRequest r;
  r.dense_int8 = opts.dense_int8;
  r.dense_bf16c = opts.dense_bf16c > 0 && !opts.dense_int8 && opts.resident_dense;
  r.mtp_int8 = opts.draft_layer_int8;
  r.mmap_dense = !opts.resident_dense;
  r.experts = opts.experts;
  r.max_model_len = opts.max_model_len;
  r.max_num_seqs = opts.max_num_seqs;
  r.cache = opts.prefix_cache_bytes;
  r.cache_share = opts.prefix_cache_share;
  r.budget_given = opts.memory_budget > 0;
  if (r.budget_given) {
    r.budget = opts.memory_budget;
  } else {
    const SystemMemory sm = read_system_memory();
    r.budget = sm.usable() ? static_cast<double>(*sm.usable()) : 1e300;   // unknown: no limit
  }
  const bool mtp = opts.load_mtp && cfg.text.mtp_num_hidden_layers > 0 && ck.has("mtp.fc.weight");
  const WeightCensus w = census_of(ck, cfg, mtp, opts.load_vision);
  // forward_mtp's int8 copy of the lm_head rows the drafts score (none when --dense int8
  // already made the lm_head int8: the drafts use it, or a view of its first rows).
  if (mtp && opts.draft_int8 && !opts.dense_int8) {
    const int64_t V = cfg.text.vocab_size;
    const int64_t rows = opts.draft_vocab > 0 && opts.draft_vocab < V ? opts.draft_vocab : V;
    r.draft_head = static_cast<double>(rows) * (static_cast<double>(cfg.text.hidden_size) + 4.0);
  }
  const StateCensus s = state_census(text_state_shape(cfg.text, mtp), cfg.text.max_position_embeddings,
                                     cfg.text.hidden_size);
  return plan_memory(w, s, r);
}

MemoryPlan plan_load(const Checkpoint& ck, const ModelConfig& cfg, const LoadOptions& opts) {
  MemoryPlan p = plan_for_options(ck, cfg, opts);
  if (!p.fits) fail(cfg.dir, ": ", p.refusal);
  log_info(p.line());
  return p;
}

}  // namespace qinfer::model
