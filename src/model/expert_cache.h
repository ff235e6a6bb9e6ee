// File-backed routed experts with a hot set kept resident (issue 21 part 3), for
// checkpoints whose dense (BF16/F16/F32) experts do not fit in memory. The
// experts stay views into the checkpoint mapping, advised MADV_RANDOM (a fault
// reads the pages it needs, not the neighbouring experts' readahead window); the
// routed experts' ranges that are not hot get MADV_WILLNEED right after routing,
// so their reads start while the shared expert and the other products run.
// Each layer counts how often the router picks each expert; between forward
// calls (at calls 1, 2, 4, ... 64, then every 64) the experts picked most often
// (counts halved at each rebalance, so the set follows the traffic) are copied
// into a fixed pool of anonymous memory, the hot budget of the memory plan, and
// their Linear views point there; evicted ones point back to the mapping.
// Why copies and not touching the mapped pages (or mlock): anonymous memory is
// not reclaimed while there is no swap, so cold experts streaming through the
// page cache cannot push the hot ones out; touched file pages stay on the LRU
// and are evicted first under exactly that pressure; mlock needs RLIMIT_MEMLOCK
// (64 KiB by default). The results are identical either way (same bytes).
// GPTQ experts (model/gptq_experts.h) cannot be views (the kernels read a repacked
// layout): a hot one is repacked into its slot (the resident load's code and bytes;
// its metadata on the heap), an evicted one's products are dropped, and moe_forward
// repacks the routed ones that are not hot for the call. Slots are sized by expert
// 0's packed form; an expert whose layout packs larger (another g_idx) stays cold.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/resident.h"

namespace qinfer::model {

struct LayerWeights;
struct MoeWeights;

class ExpertCache {
 public:
  // Takes the routed experts of `layers` (dense views into the mapping, or GPTQ ones
  // with a gptq_source; Error otherwise) and a pool of `hot_bytes` for the hot set.
  ExpertCache(std::vector<LayerWeights>& layers, double hot_bytes);
  ~ExpertCache();

  // Between forward calls: re-chooses the hot set when due.
  void maybe_rebalance();
  int64_t hot_count() const { return static_cast<int64_t>(slot_owner_.size()) - free_slots(); }
  int64_t slots() const { return static_cast<int64_t>(slot_owner_.size()); }
  int64_t rebalances() const { return rebalances_; }
  double hot_routed_share() const;   // of the routings counted since the last rebalance, the share hot ones served
  bool is_hot(int layer, int expert) const;

  // Called by moe_forward after routing (sel: n chosen expert ids of layer `w`).
  static void note_routing(const MoeWeights& w, const int* sel, int64_t n);

 private:
  struct Entry;   // one expert: its Linear views, mapped pointers, slot
  void rebalance();
  int64_t free_slots() const;
  std::vector<LayerWeights>& layers_;
  std::vector<Entry> entries_;
  std::unique_ptr<ResidentBlock> pool_;
  size_t expert_bytes_ = 0;
  std::vector<int64_t> slot_owner_;   // entry index per slot, -1 free
  int64_t calls_ = 0, next_ = 1, rebalances_ = 0;
};

}  // namespace qinfer::model
