// The memory plan made at load, before any weight byte is read: from the
// checkpoint's census (tensor headers only), the load options and the memory the
// process may use, it decides what is copied into anonymous memory, what is
// re-encoded (--dense int8), what stays mapped from the checkpoint (page cache),
// whether the routed experts stay file-backed with a hot subset resident, and how
// many KV/state bytes --max-model-len x --max-num-seqs need. When nothing fits it
// refuses before loading, naming the flags that would fit.
#pragma once
#include <cstdint>
#include <string>

#include "io/checkpoint.h"
#include "io/config.h"
#include "model/sequence_state.h"

namespace qinfer::model {

// Bytes of a checkpoint by role, as the loader will hold them.
struct WeightCensus {
  double experts = 0;            // routed experts (GPTQ: the repacked size; dense: as stored)
  int64_t expert_count = 0;      // layers x experts (the unit a hot set is made of)
  bool experts_gptq = false;     // GPTQ int4: repacked (at load, or into the hot pool and per call when file-backed)
  double dense = 0;              // dense matrices --dense int8 re-encodes, as stored
  double dense_int8 = 0;         // the same as int8 codes + fp32 row scales
  double small = 0;              // routers, tiny gates (kept as stored), norms and conv (fp32)
  double embed = 0;              // read row by row with pread: page cache only, not counted
  bool lm_head_tied = false;     // lm_head is the embedding table (its bytes are in `embed`)
  double lm_head = 0;            // lm_head as stored (tied: the embedding table, read through the mapping)
  double lm_head_int8 = 0;       // lm_head re-encoded by --dense int8 (tied too: the table as int8)
  double mtp = 0;                // the mtp.* head (all roles), when loaded
  double mtp_int8 = 0;           // the same with its matrices re-encoded as int8 (--dense int8 or
                                 // "draft_layer": "int8")
  double vision = 0;             // model.visual.* (read through the mapping), when loaded
};

// Minimum context the plan lowers to before refusing; the default runtime reserve.
constexpr int64_t kMinPlannedLen = 2048;
constexpr double kRuntimeReserve = 256.0 * (1 << 20);

// KV and recurrent state sizes of one sequence.
struct StateCensus {
  double kv_per_token = 0;       // K and V of every full-attention layer (+ MTP layer), fp32
  double per_sequence = 0;       // DeltaNet conv + recurrent states
  int64_t model_max_len = 0;     // max_position_embeddings
  double reserve = kRuntimeReserve;   // activations of one forward call and the rest of the process
};

enum class ExpertsPlacement { kAuto, kResident, kFileBacked };
// "auto" | "resident" | "mapped" (the --experts values); Error naming the option otherwise.
ExpertsPlacement parse_experts_placement(const std::string& s);

// The share of their BF16 size the plan counts for dense matrices in the 12-bit form
// (ops/bf16c.h): 0.75 for the stream, plus escapes (the loader keeps a matrix whose
// sampled blocks escape more than 5% as BF16, 0.82 at that share) and a margin.
constexpr double kBf16cPlanShare = 0.85;

struct PlanRequest {
  bool dense_int8 = false;
  bool dense_bf16c = false;      // BF16 dense matrices (and lm_head) in the 12-bit form
  bool mtp_int8 = false;         // the MTP layer re-encoded as int8 for drafting (implied by dense_int8)
  bool mmap_dense = false;       // dense weights read through the checkpoint mapping
  ExpertsPlacement experts = ExpertsPlacement::kAuto;
  int64_t max_model_len = 0;     // 0: not given (the plan lowers the model's context to what fits)
  int64_t max_num_seqs = 1;
  double draft_head = 0;         // bytes of the int8 lm_head copy MTP drafts make on first use (0: none)
  double cache = 0;              // a given prefix-cache budget (--prefix-cache-gb): counted like the KV
  double cache_share = 0;        // lowering the context leaves this share of the room after the weights
                                 // free (the prefix cache's default budget, taken from what is left)
  double budget = 0;             // bytes the process may use
  bool budget_given = false;     // --memory-budget-gb (else: what the system reports available)
};

struct MemoryPlan {
  PlanRequest req;
  double copied = 0;             // anonymous (huge pages): dense copies, int8 re-encodings, resident experts
  double reencoded = 0;          // of `copied`: the int8 re-encodings
  double bf16c = 0;              // of `copied`: the 12-bit BF16 form (at kBf16cPlanShare)
  double draft_head = 0;         // of `copied`: the MTP drafts' int8 lm_head copy (made on first use)
  double mapped = 0;             // read through the mapping every token: must stay in the page cache
  bool experts_file_backed = false;
  bool experts_gptq = false;     // file-backed GPTQ: hot ones repacked into the pool, cold ones per call
  double experts_hot = 0;        // file-backed: bytes of experts kept resident (copied), by routing frequency
  double experts_cold = 0;       // file-backed: bytes left to the page cache and the disk
  int64_t max_model_len = 0;     // the length the KV is planned for
  bool len_lowered = false;      // not given and lowered below the model's context to fit
  double kv = 0;                 // KV + state of max_num_seqs sequences of max_model_len tokens
  double cache = 0;              // the prefix cache's given budget (req.cache)
  double reserve = 0;            // activations, tokenizer, stacks: a constant
  double need = 0;               // copied + mapped + kv + cache + reserve
  bool fits = false;
  std::string refusal;           // when !fits: why, and the flags that would fit

  std::string line() const;      // the one stderr line
};


WeightCensus census_of(const Checkpoint& ck, const ModelConfig& cfg, bool load_mtp, bool load_vision);
// reserve: 32 MiB + the activations of a full forward call (Model::kMaxCallTokens rows
// of about 32 x hidden fp32 values).
StateCensus state_census(const StateShape& shape, int64_t model_max_len, int64_t hidden);

// Pure: the plan for `req` (tests feed made-up censuses).
MemoryPlan plan_memory(const WeightCensus& w, const StateCensus& s, const PlanRequest& req);

}  // namespace qinfer::model
namespace qinfer {
struct LoadOptions;
}
namespace qinfer::model {
// Model::load's plan: census of `ck`, budget from `opts` or the system
// (util/system_memory.h), the line on stderr; Error with the refusal when it does not fit.
MemoryPlan plan_load(const Checkpoint& ck, const ModelConfig& cfg, const LoadOptions& opts);
// The same plan without the line or the Error (qinfer inspect shows it for each mode).
MemoryPlan plan_for_options(const Checkpoint& ck, const ModelConfig& cfg, const LoadOptions& opts);

}  // namespace qinfer::model
