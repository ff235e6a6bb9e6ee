// GPTQ routed experts that stay file-backed (--experts mapped on a GPTQ checkpoint,
// issue 21 part 3). The packed int4 layout the kernels read (ops/gptq_pack.h) is not
// the checkpoint's, so a file-backed GPTQ expert cannot be a view: its raw tensors
// stay in the mapping and it is repacked by the same code the resident load uses
// (pack_gptq_expert below), so the packed bytes, and the logits, are identical.
// ExpertCache repacks the hot set into its pool between forward calls; moe_forward
// repacks the routed experts that are not hot into per-call memory (repack_cold).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint.h"
#include "io/config.h"

namespace qinfer::model {

struct Expert;
struct MoeWeights;
class WeightReader;

// Experts <p>{e}.{gate,up}_proj are GPTQ-packed (and not dense)?
bool gptq_split_expert(const Checkpoint& ck, const std::string& m);

// Expert `m` ("...experts.7.") unpacked and repacked exactly as the resident load does:
// gate and up fused into one product when their layouts match, down on its own.
Expert pack_gptq_expert(const WeightReader& r, const std::string& m, int64_t I, int64_t H);

// The raw tensors of one MoE block's GPTQ experts in the checkpoint mapping.
class GptqExpertSource {
 public:
  // Checks every expert's headers against expert 0 (packed once here, which also
  // validates the format and gives packed_bytes); advises the raw ranges MADV_RANDOM.
  GptqExpertSource(const Checkpoint& ck, const QuantConfig& quant, std::string prefix, int64_t E, int64_t I,
                   int64_t H);
  Expert pack(int64_t e) const;                 // reads the raw pages, drops them after
  void will_need(int64_t e) const;              // MADV_WILLNEED over expert e's raw tensors
  size_t packed_bytes() const { return packed_bytes_; }   // ops::GptqMatrix::storage_bytes of expert 0
  int64_t experts() const { return static_cast<int64_t>(raw_.size()); }

 private:
  const Checkpoint& ck_;
  QuantConfig quant_;
  std::string prefix_;   // "...mlp.experts."
  int64_t I_, H_;
  std::vector<std::vector<std::pair<const void*, size_t>>> raw_;   // per expert: its tensors' bytes
  size_t packed_bytes_ = 0;
};

// Sum of storage_bytes() of an expert's GPTQ matrices.
size_t gptq_expert_storage(const Expert& x);
// Moves a packed expert's codes, scales and zeros to dst (gptq_expert_storage bytes).
void move_expert_storage(Expert& x, unsigned char* dst);

// Experts `ids` of `w` (routed, not hot; ascending) repacked from w.gptq_source in
// parallel, for one pass of products: element i is expert ids[i].
std::vector<Expert> repack_cold(const MoeWeights& w, const std::vector<int64_t>& ids);

}  // namespace qinfer::model
