#include "model/expert_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "model/weights.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {

size_t mat_bytes(const Linear& l) { return static_cast<size_t>(l.dense.bytes()); }

std::vector<Linear*> expert_mats(Expert& e) {
  std::vector<Linear*> out;
  for (Linear* l : {&e.gate_up, &e.gate, &e.up, &e.down})
    if (!l->empty()) out.push_back(l);
  return out;
}

}  // namespace

struct ExpertCache::Entry {
  int layer = 0, expert = 0;
  const GptqExpertSource* gptq = nullptr;   // GPTQ: repacked into the slot; else dense views below
  std::vector<Linear*> mats;
  std::vector<const void*> mapped;   // each matrix's view into the checkpoint
  double score = 0;
  int64_t slot = -1;
};

ExpertCache::ExpertCache(std::vector<LayerWeights>& layers, double hot_bytes) : layers_(layers) {
  for (size_t li = 0; li < layers.size(); ++li) {
    MoeWeights& m = layers[li].moe;
    m.routing = std::make_unique<ExpertRouting>();
    m.routing->count.assign(m.experts.size(), 0);
    m.routing->hot.assign(m.experts.size(), 0);
    for (size_t e = 0; e < m.experts.size(); ++e) {
      Entry x;
      x.layer = static_cast<int>(li);
      x.expert = static_cast<int>(e);
      if (m.gptq_source) {   // slots sized by expert 0's packed form (the experts of a checkpoint share it)
        x.gptq = m.gptq_source.get();
        expert_bytes_ = std::max(expert_bytes_, m.gptq_source->packed_bytes());
        entries_.push_back(std::move(x));
        continue;
      }
      x.mats = expert_mats(m.experts[e]);
      size_t bytes = 0;
      for (Linear* l : x.mats) {
        if (l->gptq || !l->dense.owned.empty() || l->dense.type == ops::WType::Q8)
          fail("file-backed experts: layer ", li, " expert ", e, " is not a dense view into the checkpoint");
        x.mapped.push_back(l->dense.data);
        bytes += mat_bytes(*l);
        advise_pages(l->dense.data, mat_bytes(*l), MADV_RANDOM);
      }
      expert_bytes_ = std::max(expert_bytes_, bytes);
      entries_.push_back(std::move(x));
    }
  }
  const int64_t n = expert_bytes_ == 0 ? 0 : static_cast<int64_t>(hot_bytes / static_cast<double>(expert_bytes_));
  const int64_t slots = std::clamp<int64_t>(n, 0, static_cast<int64_t>(entries_.size()));
  slot_owner_.assign(static_cast<size_t>(slots), -1);
  if (slots > 0) pool_ = std::make_unique<ResidentBlock>(static_cast<size_t>(slots) * expert_bytes_);
  log_info("experts file-backed", !entries_.empty() && entries_[0].gptq ? " (GPTQ, repacked on use)" : "", ": ",
           entries_.size(), " experts of ", expert_bytes_ / 1000000.0, " MB, ", slots,
           " of them kept resident by routing frequency");
}

ExpertCache::~ExpertCache() = default;

int64_t ExpertCache::free_slots() const {
  return std::count(slot_owner_.begin(), slot_owner_.end(), int64_t{-1});
}

void ExpertCache::note_routing(const MoeWeights& w, const int* sel, int64_t n) {
  ExpertRouting& r = *w.routing;
  std::vector<int> cold;
  for (int64_t i = 0; i < n; ++i) {
    const int e = sel[i];
    ++r.count[static_cast<size_t>(e)];
    ++r.total;
    if (r.hot[static_cast<size_t>(e)]) {
      ++r.hot_hits;
    } else if (std::find(cold.begin(), cold.end(), e) == cold.end()) {
      cold.push_back(e);
    }
  }
  // Start the reads of the cold experts now (readahead is off under MADV_RANDOM).
  // (GPTQ: their raw tensors, which moe_forward repacks next, several threads at once.)
  if (cold.size() > 64) return;
  for (int e : cold) {
    if (w.gptq_source) {
      w.gptq_source->will_need(e);
      continue;
    }
    for (const Linear* l : {&w.experts[e].gate_up, &w.experts[e].gate, &w.experts[e].up, &w.experts[e].down})
      if (!l->empty()) advise_pages(l->dense.data, mat_bytes(*l), MADV_WILLNEED);
  }
}

double ExpertCache::hot_routed_share() const {
  uint64_t hot = 0, total = 0;
  for (const LayerWeights& l : layers_) {
    hot += l.moe.routing->hot_hits;
    total += l.moe.routing->total;
  }
  return total == 0 ? 0.0 : static_cast<double>(hot) / static_cast<double>(total);
}

bool ExpertCache::is_hot(int layer, int expert) const {
  return layers_[static_cast<size_t>(layer)].moe.routing->hot[static_cast<size_t>(expert)] != 0;
}

void ExpertCache::maybe_rebalance() {
  if (++calls_ < next_) return;
  next_ = next_ < 64 ? next_ * 2 : next_ + 64;
  rebalance();
}

void ExpertCache::rebalance() {
  ++rebalances_;
  for (Entry& x : entries_) {
    ExpertRouting& r = *layers_[x.layer].moe.routing;
    x.score = x.score / 2 + static_cast<double>(r.count[x.expert]);
    r.count[x.expert] = 0;
  }
  for (LayerWeights& l : layers_) l.moe.routing->hot_hits = l.moe.routing->total = 0;
  if (slot_owner_.empty()) return;
  std::vector<int64_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t k = std::min(order.size(), slot_owner_.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(k), order.end(), [&](int64_t a, int64_t b) {
    return entries_[a].score > entries_[b].score || (entries_[a].score == entries_[b].score && a < b);
  });
  std::vector<uint8_t> want(entries_.size(), 0);
  for (size_t i = 0; i < k; ++i)
    if (entries_[order[i]].score > 0) want[order[i]] = 1;
  // Evict, then fill the freed slots.
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& x = entries_[i];
    if (x.slot < 0 || want[i]) continue;
    if (x.gptq) layers_[x.layer].moe.experts[x.expert] = Expert{};   // repacked per call again
    for (size_t m = 0; m < x.mats.size(); ++m) x.mats[m]->dense.data = x.mapped[m];
    layers_[x.layer].moe.routing->hot[x.expert] = 0;
    slot_owner_[x.slot] = -1;
    x.slot = -1;
  }
  std::vector<int64_t> promote;
  size_t free_at = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!want[i] || entries_[i].slot >= 0) continue;
    while (slot_owner_[free_at] >= 0) ++free_at;
    entries_[i].slot = static_cast<int64_t>(free_at);
    slot_owner_[free_at] = static_cast<int64_t>(i);
    promote.push_back(static_cast<int64_t>(i));
  }
  std::vector<uint8_t> placed(promote.size(), 1);
  parallel_each(static_cast<int64_t>(promote.size()), [&](int64_t i) {
    Entry& x = entries_[promote[i]];
    unsigned char* dst = pool_->data() + static_cast<size_t>(x.slot) * expert_bytes_;
    if (x.gptq) {   // the resident load's repack (same bytes), its storage moved into the slot
      Expert packed = x.gptq->pack(x.expert);
      if (gptq_expert_storage(packed) > expert_bytes_) {   // a larger layout than expert 0's: stays cold
        placed[i] = 0;
        return;
      }
      move_expert_storage(packed, dst);
      layers_[x.layer].moe.experts[x.expert] = std::move(packed);
      return;
    }
    for (size_t m = 0; m < x.mats.size(); ++m) {
      const size_t n = mat_bytes(*x.mats[m]);
      std::memcpy(dst, x.mapped[m], n);
      drop_pages(x.mapped[m], n);   // the copy serves it now
      x.mats[m]->dense.data = dst;
      dst += n;
    }
  });
  for (size_t i = 0; i < promote.size(); ++i) {
    Entry& x = entries_[promote[i]];
    if (placed[i]) {
      layers_[x.layer].moe.routing->hot[x.expert] = 1;
    } else {
      slot_owner_[x.slot] = -1;
      x.slot = -1;
    }
  }
}

}  // namespace qinfer::model
