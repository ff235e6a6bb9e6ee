#include "model/gptq_experts.h"

#include <sys/mman.h>

#include "model/weights.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {

const char* const kModules[] = {"gate_proj", "up_proj", "down_proj"};
const char* const kLeaves[] = {".qweight", ".qzeros", ".scales", ".g_idx"};

}  // namespace

bool gptq_split_expert(const Checkpoint& ck, const std::string& m) {
  return ck.has(m + "gate_proj.qweight") && ck.has(m + "up_proj.qweight") && !ck.has(m + "gate_proj.weight") &&
         !ck.has(m + "up_proj.weight");
}

Expert pack_gptq_expert(const WeightReader& r, const std::string& m, int64_t I, int64_t H) {
  Expert x;
  GptqLinear g = r.gptq(m + "gate_proj", I, H), u = r.gptq(m + "up_proj", I, H);
  if (same_gptq_layout(g, u)) {   // one fused product
    x.gate_up.rows = 2 * I;
    x.gate_up.cols = H;
    x.gate_up.gptq = pack_gptq(g, &u, m + "gate_proj/up_proj");
  } else {                        // e.g. desc_act: each has its own g_idx
    x.gate.rows = x.up.rows = I;
    x.gate.cols = x.up.cols = H;
    x.gate.gptq = pack_gptq(g, nullptr, m + "gate_proj");
    x.up.gptq = pack_gptq(u, nullptr, m + "up_proj");
  }
  x.down = r.linear(m + "down_proj", H, I);
  return x;
}

GptqExpertSource::GptqExpertSource(const Checkpoint& ck, const QuantConfig& quant, std::string prefix, int64_t E,
                                   int64_t I, int64_t H)
    : ck_(ck), quant_(quant), prefix_(std::move(prefix)), I_(I), H_(H) {
  const std::string m0 = prefix_ + "0.";
  if (!ck.has(m0 + "down_proj.qweight"))
    fail(ck.dir(), ": tensor ", m0, "down_proj.qweight is missing: file-backed GPTQ experts need GPTQ down_proj too");
  raw_.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    const std::string m = prefix_ + std::to_string(e) + ".";
    if (!gptq_split_expert(ck, m)) fail(ck.dir(), ": expert ", m, "* is not GPTQ-packed like expert ", m0, "*");
    for (const char* mod : kModules)
      for (const char* leaf : kLeaves) {
        const TensorInfo* t0 = ck.find(m0 + mod + leaf);
        const TensorInfo* t = ck.find(m + mod + leaf);
        if (!t0 && !t) continue;
        if (!t0 || !t || t->dtype != t0->dtype || t->shape != t0->shape)
          fail(ck.dir(), ": tensor ", m, mod, leaf, t ? " (" + t->shape_str() + ")" : std::string(" (missing)"),
               " does not match ", m0, mod, leaf, t0 ? " (" + t0->shape_str() + ")" : std::string(" (missing)"));
        raw_[static_cast<size_t>(e)].emplace_back(t->data, static_cast<size_t>(t->nbytes));
        advise_pages(t->data, static_cast<size_t>(t->nbytes), MADV_RANDOM);
      }
  }
  if (E > 0) packed_bytes_ = gptq_expert_storage(pack(0));
}

Expert GptqExpertSource::pack(int64_t e) const {
  WeightReader r(ck_, quant_, false);
  return pack_gptq_expert(r, prefix_ + std::to_string(e) + ".", I_, H_);
}

void GptqExpertSource::will_need(int64_t e) const {
  for (const auto& [p, n] : raw_[static_cast<size_t>(e)]) advise_pages(p, n, MADV_WILLNEED);
}

size_t gptq_expert_storage(const Expert& x) {
  size_t n = 0;
  for (const Linear* l : {&x.gate_up, &x.gate, &x.up, &x.down})
    if (l->gptq) n += static_cast<size_t>(l->gptq->storage_bytes());
  return n;
}

void move_expert_storage(Expert& x, unsigned char* dst) {
  for (Linear* l : {&x.gate_up, &x.gate, &x.up, &x.down}) {
    if (!l->gptq) continue;
    const size_t n = static_cast<size_t>(l->gptq->storage_bytes());
    l->gptq->move_storage(dst);
    dst += n;
  }
}

std::vector<Expert> repack_cold(const MoeWeights& w, const std::vector<int64_t>& ids) {
  std::vector<Expert> cold(ids.size());
  parallel_each(static_cast<int64_t>(ids.size()), [&](int64_t i) { cold[static_cast<size_t>(i)] = w.gptq_source->pack(ids[i]); });
  return cold;
}

}  // namespace qinfer::model
