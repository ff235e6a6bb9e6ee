#include "model/weights.h"

#include <cmath>
#include <cstring>

#include "io/dtype.h"
#include "model/gptq_experts.h"
#include "ops/norms_activations_rope.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace qinfer::model {

namespace {

std::vector<float> zc_norm(const WeightReader& r, const std::string& name, int64_t n) {
  std::vector<float> w = r.floats(name, {n});
  ops::add_one(w.data(), n);
  return w;
}

// Per-expert tensors of one MoE block: experts.{e}.{gate,up,down}_proj, loaded
// (unpacked and repacked for GPTQ) in parallel over experts.
std::vector<Expert> load_split_experts(const WeightReader& r, const std::string& p, int64_t E, int64_t I,
                                       int64_t H) {
  std::vector<Expert> experts(E);
  parallel_each(E, [&](int64_t e) {
    const std::string m = p + std::to_string(e) + ".";
    Expert& x = experts[e];
    if (gptq_split_expert(r.checkpoint(), m)) {
      x = pack_gptq_expert(r, m, I, H);
      return;
    }
    x.gate = r.linear(m + "gate_proj", I, H, true, false);
    x.up = r.linear(m + "up_proj", I, H, true, false);
    x.down = r.linear(m + "down_proj", H, I, true, false);
  });
  return experts;
}

// gptq_file_backed: GPTQ per-expert tensors stay in the mapping (model/gptq_experts.h),
// repacked on use; m.experts stay empty until ExpertCache makes one hot.
MoeWeights load_moe(const WeightReader& r, const TextConfig& tc, const std::string& p, bool gptq_file_backed) {
  const int64_t H = tc.hidden_size, E = tc.num_experts, I = tc.moe_intermediate_size;
  const int64_t Is = tc.shared_expert_intermediate_size;
  const Checkpoint& ck = r.checkpoint();
  MoeWeights m;
  m.router = r.linear(p + "gate", E, H, false);
  const std::string fused_gu = p + "experts.gate_up_proj", fused_d = p + "experts.down_proj";
  const bool fused = ck.has(fused_gu) || ck.has(fused_d);
  const std::string e0 = p + "experts.0.";
  const bool split = ck.has(e0 + "gate_proj.weight") || ck.has(e0 + "gate_proj.qweight") ||
                     ck.has(e0 + "down_proj.weight") || ck.has(e0 + "down_proj.qweight");
  if (fused && split)
    fail(ck.dir(), ": ", p, "experts has both fused (", fused_gu, ") and per-expert (", e0, "*) tensors");
  if (fused) {
    const TensorInfo& gu = r.tensor(fused_gu, {E, 2 * I, H});
    const TensorInfo& d = r.tensor(fused_d, {E, H, I});
    m.experts.resize(E);
    for (int64_t e = 0; e < E; ++e) {
      m.experts[e].gate_up = r.dense_slice(gu, e * 2 * I * H, 2 * I, H);
      m.experts[e].down = r.dense_slice(d, e * H * I, H, I);
    }
  } else if (split && gptq_file_backed && gptq_split_expert(ck, e0)) {
    m.experts.resize(E);
    m.gptq_source = std::make_unique<GptqExpertSource>(ck, r.quant(), p + "experts.", E, I, H);
  } else if (split) {
    m.experts = load_split_experts(r, p + "experts.", E, I, H);
  } else {
    fail(ck.dir(), ": tensor ", fused_gu, " is missing (and there are no per-expert tensors ", e0,
         "gate_proj.* either)");
  }
  m.shared_gate = r.linear(p + "shared_expert.gate_proj", Is, H);
  m.shared_up = r.linear(p + "shared_expert.up_proj", Is, H);
  m.shared_down = r.linear(p + "shared_expert.down_proj", H, Is);
  m.shared_expert_gate = r.linear(p + "shared_expert_gate", 1, H, false);
  return m;
}

DeltaNetWeights load_delta(const WeightReader& r, const TextConfig& tc, const std::string& p) {
  const int64_t H = tc.hidden_size;
  const int64_t nk = tc.linear_num_key_heads, nv = tc.linear_num_value_heads;
  const int64_t dk = tc.linear_key_head_dim, dv = tc.linear_value_head_dim, K = tc.linear_conv_kernel_dim;
  const int64_t conv_dim = 2 * nk * dk + nv * dv;
  DeltaNetWeights d;
  d.in_qkv = r.linear(p + "in_proj_qkv", conv_dim, H);
  d.in_z = r.linear(p + "in_proj_z", nv * dv, H);
  d.in_b = r.linear(p + "in_proj_b", nv, H, false);
  d.in_a = r.linear(p + "in_proj_a", nv, H, false);
  d.out = r.linear(p + "out_proj", H, nv * dv);
  std::vector<float> conv = r.floats(p + "conv1d.weight", {conv_dim, 1, K});
  d.conv_t.resize(K * conv_dim);
  for (int64_t c = 0; c < conv_dim; ++c)
    for (int64_t j = 0; j < K; ++j) d.conv_t[j * conv_dim + c] = conv[c * K + j];
  d.a_neg = r.floats(p + "A_log", {nv});
  for (float& a : d.a_neg) a = -std::exp(a);
  d.dt_bias = r.floats(p + "dt_bias", {nv});
  d.norm = r.floats(p + "norm.weight", {dv});
  return d;
}

AttentionWeights load_attention(const WeightReader& r, const TextConfig& tc, const std::string& p) {
  const int64_t H = tc.hidden_size, nh = tc.num_attention_heads, nkv = tc.num_key_value_heads, hd = tc.head_dim;
  AttentionWeights a;
  a.q = r.linear(p + "q_proj", nh * hd * 2, H);
  a.k = r.linear(p + "k_proj", nkv * hd, H);
  a.v = r.linear(p + "v_proj", nkv * hd, H);
  a.o = r.linear(p + "o_proj", H, nh * hd);
  a.q_norm = zc_norm(r, p + "q_norm.weight", hd);
  a.k_norm = zc_norm(r, p + "k_norm.weight", hd);
  return a;
}

LayerWeights load_layer(const WeightReader& r, const TextConfig& tc, const std::string& p, LayerType type,
                        bool gptq_file_backed = false) {
  LayerWeights l;
  l.type = type;
  l.input_norm = zc_norm(r, p + "input_layernorm.weight", tc.hidden_size);
  l.post_norm = zc_norm(r, p + "post_attention_layernorm.weight", tc.hidden_size);
  if (type == LayerType::kLinearAttention) l.delta = load_delta(r, tc, p + "linear_attn.");
  else l.attn = load_attention(r, tc, p + "self_attn.");
  l.moe = load_moe(r, tc, p + "mlp.", gptq_file_backed);
  return l;
}

size_t moe_bytes(const MoeWeights& m) {
  size_t n = m.router.bytes() + m.shared_gate.bytes() + m.shared_up.bytes() + m.shared_down.bytes() +
             m.shared_expert_gate.bytes();
  for (const auto& e : m.experts) n += e.gate_up.bytes() + e.gate.bytes() + e.up.bytes() + e.down.bytes();
  return n;
}

size_t layer_bytes(const LayerWeights& l) {
  size_t n = moe_bytes(l.moe) + (l.input_norm.size() + l.post_norm.size()) * sizeof(float);
  if (l.type == LayerType::kLinearAttention) {
    const auto& d = l.delta;
    n += d.in_qkv.bytes() + d.in_z.bytes() + d.in_b.bytes() + d.in_a.bytes() + d.out.bytes();
    n += (d.conv_t.size() + d.a_neg.size() + d.dt_bias.size() + d.norm.size()) * sizeof(float);
  } else {
    const auto& a = l.attn;
    n += a.q.bytes() + a.k.bytes() + a.v.bytes() + a.o.bytes() + (a.q_norm.size() + a.k_norm.size()) * sizeof(float);
  }
  return n;
}

}  // namespace

size_t ModelWeights::bytes() const {
  size_t n = embed ? embed->nbytes : 0;
  for (const auto& l : layers) n += layer_bytes(l);
  n += final_norm.size() * sizeof(float);
  if (lm_head.gptq || lm_head.dense.weights() != (embed ? embed->data : nullptr)) n += lm_head.bytes();
  if (mtp) n += layer_bytes(mtp->layer) + mtp->fc.bytes() + 3 * mtp->norm.size() * sizeof(float);
  return n;
}

std::unique_ptr<ModelWeights> load_weights(const ModelConfig& cfg, std::unique_ptr<Checkpoint> ck,
                                           bool dense_int8, bool load_mtp, bool resident_dense,
                                           bool experts_mapped, bool mtp_int8, bool dense_bf16c) {
  const TextConfig& tc = cfg.text;
  auto w = std::make_unique<ModelWeights>();
  w->ck = std::move(ck);
  const Checkpoint& c = *w->ck;
  WeightReader r(c, cfg.quant, dense_int8);
  const int64_t H = tc.hidden_size, V = tc.vocab_size;
  if (resident_dense) {
    // Address space only: an upper bound of what is copied (every byte of the
    // checkpoint, plus alignment); the pages written are what becomes resident.
    const size_t n = c.total_bytes();
    w->resident = std::make_unique<ResidentArena>(n + n / 8 + (size_t{256} << 20));
    r.set_arena(w->resident.get());
    r.set_bf16c(dense_bf16c);
  }
  w->prefix = text_prefix(c);
  w->embed = &r.tensor(w->prefix + "embed_tokens.weight", {V, H});

  // The lm_head first: read in full every token, it should lie in huge pages, which the
  // arena's first pages get; near the end of a load that fills the machine the
  // kernel finds fewer (40-layer synth on a 23 GiB host: 20-60% of the arena's last
  // GB in huge pages against ~100% at its start; the lm_head streamed at 23 GB/s
  // there against 26 on the 8-layer model).
  w->final_norm = zc_norm(r, w->prefix + "norm.weight", H);
  if (c.has("lm_head.weight") || c.has("lm_head.qweight")) {
    w->lm_head = r.linear("lm_head", V, H);
  } else if (tc.tie_word_embeddings) {
    w->lm_head.rows = V;
    w->lm_head.cols = H;
    w->lm_head.dense = ops::dense_view(wtype_of(*w->embed), w->embed->data, V, H);
    if (dense_int8) {
      uint8_t* dst = w->resident ? w->resident->alloc(static_cast<size_t>(V * H)) : nullptr;
      w->lm_head.dense = ops::dense_to_q8(w->lm_head.dense, nullptr, dst);
      drop_pages(w->embed->data, w->embed->nbytes);   // only single embedding rows are read from now on
    } else if (dense_bf16c && w->resident && reencode_bf16c(w->lm_head.dense, w->resident.get())) {
      drop_pages(w->embed->data, w->embed->nbytes);   // only single embedding rows are read from now on
    }
  } else {
    fail(c.dir(), ": tensor lm_head.weight is missing (tie_word_embeddings is false)");
  }
  if (w->resident) make_rest_resident(*w, *w->resident);   // the lm_head (MTP: at the end)
  Progress progress("loading layers", tc.num_hidden_layers);
  int n_full = 0, n_lin = 0;
  for (int i = 0; i < tc.num_hidden_layers; ++i) {
    const LayerType t = tc.layer_types.at(i);
    w->layers.push_back(load_layer(r, tc, w->prefix + "layers." + std::to_string(i) + ".", t, experts_mapped));
    w->layers.back().cache_index = t == LayerType::kFullAttention ? n_full++ : n_lin++;
    if (w->resident) make_layer_resident(w->layers.back(), *w->resident, experts_mapped);
    progress.update(i + 1);
  }
  progress.finish();
  if (load_mtp && tc.mtp_num_hidden_layers > 0 && c.has("mtp.fc.weight")) {
    if (tc.mtp_num_hidden_layers != 1)
      fail(cfg.dir, "/config.json: mtp_num_hidden_layers = ", tc.mtp_num_hidden_layers, " (only 1 is supported)");
    // The MTP layer only drafts: with mtp_int8 its matrices are re-encoded like --dense int8's.
    WeightReader rm(c, cfg.quant, dense_int8 || mtp_int8);
    if (w->resident) {
      rm.set_arena(w->resident.get());
      rm.set_bf16c(dense_bf16c);
    }
    auto m = std::make_unique<MtpWeights>();
    m->pre_fc_norm_embedding = zc_norm(rm, "mtp.pre_fc_norm_embedding.weight", H);
    m->pre_fc_norm_hidden = zc_norm(rm, "mtp.pre_fc_norm_hidden.weight", H);
    m->norm = zc_norm(rm, "mtp.norm.weight", H);
    m->fc = rm.linear("mtp.fc", H, 2 * H);
    m->layer = load_layer(rm, tc, "mtp.layers.0.", LayerType::kFullAttention);
    w->mtp = std::move(m);
  }
  const int64_t rd = tc.rotary_dim();
  w->inv_freq.resize(rd / 2);
  ops::rope_inv_freq(tc.rope.theta, rd, w->inv_freq.data());
  if (w->resident) make_rest_resident(*w, *w->resident);
  return w;
}

std::string text_prefix(const Checkpoint& c) {
  if (c.has("model.language_model.embed_tokens.weight")) return "model.language_model.";
  if (c.has("model.embed_tokens.weight")) return "model.";
  fail(c.dir(), ": tensor model.language_model.embed_tokens.weight (or model.embed_tokens.weight) is missing");
}

LayerWeights load_text_layer(const ModelConfig& cfg, const Checkpoint& ck, int index) {
  const TextConfig& tc = cfg.text;
  if (index < 0 || index >= tc.num_hidden_layers)
    fail(cfg.dir, "/config.json: layer ", index, " is outside 0..", tc.num_hidden_layers - 1);
  WeightReader r(ck, cfg.quant, false);
  const LayerType t = tc.layer_types.at(index);
  LayerWeights l = load_layer(r, tc, text_prefix(ck) + "layers." + std::to_string(index) + ".", t);
  int same = 0;
  for (int i = 0; i < index; ++i) same += tc.layer_types.at(i) == t;
  l.cache_index = same;
  return l;
}

void embed_rows(const ModelWeights& w, const int* tokens, int64_t n, int64_t hidden, float* out) {
  embed_rows(*w.embed, tokens, n, hidden, out);
}

void embed_rows(const TensorInfo& t, const int* tokens, int64_t n, int64_t hidden, float* out) {
  // Rows are read from the file (TensorInfo::read_bytes), not through the
  // mapping, so only the page cache holds the table, not this process's memory.
  const size_t row_bytes = static_cast<size_t>(hidden) * dtype_size(t.dtype);
  std::vector<uint8_t> row(row_bytes);
  for (int64_t i = 0; i < n; ++i) {
    t.read_bytes(static_cast<size_t>(tokens[i]) * row_bytes, row_bytes, row.data());
    to_f32(t.dtype, row.data(), hidden, out + i * hidden);
  }
}

}  // namespace qinfer::model
