// Weight binding across checkpoint layouts: each test rewrites a golden fixture
// into another legal layout (text-only prefix, per-expert BF16 experts, F32
// tensors, GPTQ v2 zeros, desc_act g_idx, int8 dense) and checks the logits, or
// into a broken one and checks the error names the tensor.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>

#include "golden.h"
#include "io/checkpoint.h"
#include "io/dtype.h"
#include "io/synthetic_checkpoint.h"
#include "util/error.h"

namespace qinfer::test {
namespace {

namespace fs = std::filesystem;

struct Entry {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// All tensors and the config of a fixture folder, editable, writable elsewhere.
struct Editable {
  std::map<std::string, Entry> t;
  nlohmann::json config;

  explicit Editable(const std::string& dir) {
    auto ck = Checkpoint::open(dir);
    for (const auto& [name, info] : ck->all())
      t[name] = {info->dtype, info->shape, std::vector<uint8_t>(info->data, info->data + info->nbytes)};
    std::ifstream in(dir + "/config.json");
    config = nlohmann::json::parse(in);
  }
  std::string write(const std::string& name) const {
    const std::string dir = (fs::temp_directory_path() / ("qinfer_model_test_" + name)).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
    SafetensorsWriter w;
    for (const auto& [n, e] : t) w.add(n, e.dtype, e.shape, e.bytes);
    w.write(dir + "/model.safetensors");
    std::ofstream(dir + "/config.json") << config.dump(2);
    return dir;
  }
  void rename_prefix(const std::string& from, const std::string& to) {
    std::map<std::string, Entry> out;
    for (auto& [n, e] : t) out[n.rfind(from, 0) == 0 ? to + n.substr(from.size()) : n] = std::move(e);
    t = std::move(out);
  }
  void to_f32(const std::string& name) {
    Entry& e = t.at(name);
    ASSERT_EQ(e.dtype, DType::BF16);
    std::vector<uint8_t> out(e.bytes.size() * 2);
    for (size_t i = 0; i < e.bytes.size() / 2; ++i) {
      uint16_t h;
      std::memcpy(&h, &e.bytes[2 * i], 2);
      const float f = bf16_to_f32(h);
      std::memcpy(&out[4 * i], &f, 4);
    }
    e = {DType::F32, e.shape, std::move(out)};
  }
  void to_f16(const std::string& name) {
    Entry& e = t.at(name);
    ASSERT_EQ(e.dtype, DType::BF16);
    for (size_t i = 0; i < e.bytes.size() / 2; ++i) {
      uint16_t h;
      std::memcpy(&h, &e.bytes[2 * i], 2);
      h = f32_to_f16(bf16_to_f32(h));
      std::memcpy(&e.bytes[2 * i], &h, 2);
    }
    e.dtype = DType::F16;
  }
  std::vector<int32_t> i32(const std::string& name) const {
    const Entry& e = t.at(name);
    std::vector<int32_t> v(e.bytes.size() / 4);
    std::memcpy(v.data(), e.bytes.data(), e.bytes.size());
    return v;
  }
  void set_i32(const std::string& name, const std::vector<int32_t>& v) {
    std::memcpy(t.at(name).bytes.data(), v.data(), v.size() * 4);
  }
};

std::string fixture(const std::string& variant) { return fixtures_dir() + "/qwen35moe-tiny-s1/" + variant; }

// Logits of golden prompt 1 (33 tokens), every position.
std::vector<float> logits_of(Model& m, const std::string& golden_dir) {
  auto s = m.new_sequence();
  return run(m, *s, Golden(golden_dir).i32("p1.input_ids"));
}

void expect_same_logits(const std::string& dir, const std::string& golden_dir, double tol) {
  LoadOptions o;
  o.threads = 2;
  auto m = Model::load(dir, o);
  const std::vector<float> got = logits_of(*m, golden_dir);
  const std::vector<float> want = Golden(golden_dir).f32("p1.logits");
  Diff d = compare(got.data(), want.data(), want.size());
  std::printf("  %-40s rel-L2 %.3e max-abs %.3e\n", fs::path(dir).filename().c_str(), d.rel_l2, d.max_abs);
  EXPECT_LT(d.rel_l2, tol) << dir;
  fs::remove_all(dir);
}

void expect_load_error(const std::string& dir, const std::vector<std::string>& needles) {
  try {
    LoadOptions o;
    o.threads = 2;
    Model::load(dir, o);
    ADD_FAILURE() << "loading " << dir << " did not fail";
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

const std::string kLM = "model.language_model.";

TEST(Loader, TextOnlyPrefix) {
  Editable e(fixture("bf16"));
  e.rename_prefix(kLM, "model.");
  expect_same_logits(e.write("text_prefix"), fixture("bf16"), 1e-5);
}

TEST(Loader, PerExpertBf16AndF32Tensors) {
  Editable e(fixture("bf16"));
  const auto& tc = e.config["text_config"];
  const int64_t E = tc["num_experts"], I = tc["moe_intermediate_size"], H = tc["hidden_size"];
  const int L = tc["num_hidden_layers"];
  for (int l = 0; l < L; ++l) {
    const std::string p = kLM + "layers." + std::to_string(l) + ".mlp.experts.";
    Entry gu = e.t.at(p + "gate_up_proj"), dn = e.t.at(p + "down_proj");
    e.t.erase(p + "gate_up_proj");
    e.t.erase(p + "down_proj");
    for (int64_t x = 0; x < E; ++x) {
      const std::string q = p + std::to_string(x) + ".";
      const uint8_t* g = gu.bytes.data() + x * 2 * I * H * 2;
      e.t[q + "gate_proj.weight"] = {DType::BF16, {I, H}, std::vector<uint8_t>(g, g + I * H * 2)};
      e.t[q + "up_proj.weight"] = {DType::BF16, {I, H}, std::vector<uint8_t>(g + I * H * 2, g + 2 * I * H * 2)};
      const uint8_t* d = dn.bytes.data() + x * H * I * 2;
      e.t[q + "down_proj.weight"] = {DType::BF16, {H, I}, std::vector<uint8_t>(d, d + H * I * 2)};
    }
  }
  e.to_f32(kLM + "layers.0.linear_attn.A_log");
  e.to_f32(kLM + "layers.0.linear_attn.norm.weight");
  e.to_f32(kLM + "layers.3.self_attn.o_proj.weight");
  e.to_f32(kLM + "norm.weight");
  e.to_f32("lm_head.weight");
  expect_same_logits(e.write("per_expert"), fixture("bf16"), 1e-5);
}

// The layout of the real GPTQ release: every non-expert tensor F16.
TEST(Loader, GptqWithF16Tensors) {
  Editable e(fixture("gptq"));
  std::vector<std::string> names;
  for (const auto& [n, ent] : e.t)
    if (ent.dtype == DType::BF16 && n.rfind("mtp.", 0) != 0) names.push_back(n);
  for (const auto& n : names) e.to_f16(n);
  e.config["text_config"]["dtype"] = "float16";
  expect_same_logits(e.write("gptq_f16"), fixture("gptq"), 1e-4);
}

TEST(Loader, GptqV2Zeros) {
  Editable e(fixture("gptq"));
  e.config["quantization_config"]["checkpoint_format"] = "gptq_v2";
  e.config["quantization_config"]["format"] = "gptq_v2";
  for (auto& [name, ent] : e.t) {
    if (name.size() < 7 || name.compare(name.size() - 7, 7, ".qzeros") != 0) continue;
    std::vector<int32_t> z = e.i32(name);
    for (auto& w : z) w = static_cast<int32_t>(static_cast<uint32_t>(w) + 0x11111111u);
    e.set_i32(name, z);
  }
  expect_same_logits(e.write("gptq_v2"), fixture("gptq"), 1e-5);
}

// desc_act: groups relabelled in reverse order through g_idx (scales and zeros
// rows permuted to match), so g_idx is non-monotone but the weights are equal.
TEST(Loader, GptqDescActGidx) {
  Editable e(fixture("gptq"));
  e.config["quantization_config"]["desc_act"] = true;
  int permuted = 0;
  for (auto& [name, ent] : e.t) {
    if (name.size() < 6 || name.compare(name.size() - 6, 6, ".g_idx") != 0) continue;
    const std::string m = name.substr(0, name.size() - 6);
    Entry& sc = e.t.at(m + ".scales");
    Entry& qz = e.t.at(m + ".qzeros");
    const int64_t G = sc.shape[0];
    if (G < 2) continue;
    std::vector<int32_t> g = e.i32(name);
    for (auto& x : g) x = static_cast<int32_t>(G - 1 - x);
    e.set_i32(name, g);
    for (Entry* t : {&sc, &qz}) {
      const size_t row = t->bytes.size() / G;
      std::vector<uint8_t> out(t->bytes.size());
      for (int64_t r = 0; r < G; ++r) std::memcpy(&out[(G - 1 - r) * row], &t->bytes[r * row], row);
      t->bytes = std::move(out);
    }
    ++permuted;
  }
  ASSERT_GT(permuted, 0);
  expect_same_logits(e.write("desc_act"), fixture("gptq"), 1e-5);
}

// int8 dense weights: checked on the residual stream after the first layer (the
// tiny fixture's routing margins are ~1e-3, so later layers may pick other experts).
// Asymmetric zero points and an arbitrary g_idx (desc_act): the GPTQ model must
// equal the same weights dequantized in the test and stored as dense F32 experts.
TEST(Loader, GptqAsymAndArbitraryGidxEqualDequantized) {
  Editable q(fixture("gptq"));
  q.config["quantization_config"]["desc_act"] = true;
  q.config["quantization_config"]["sym"] = false;
  Editable d = q;
  d.config.erase("quantization_config");
  std::mt19937 rng(11);
  std::vector<std::string> modules;
  for (const auto& [n, e] : q.t)
    if (n.size() > 8 && n.compare(n.size() - 8, 8, ".qweight") == 0) modules.push_back(n.substr(0, n.size() - 8));
  ASSERT_FALSE(modules.empty());
  for (const auto& m : modules) {
    const Entry& qw = q.t.at(m + ".qweight");
    const Entry& sc = q.t.at(m + ".scales");
    const int64_t K = qw.shape[0] * 8, N = qw.shape[1], G = sc.shape[0];
    std::vector<int32_t> qz = q.i32(m + ".qzeros"), gi(K);
    for (auto& w : qz) {
      uint32_t v = 0;
      for (int j = 0; j < 8; ++j) v |= static_cast<uint32_t>(rng() % 15) << (4 * j);   // stored zero-1 in 0..14
      w = static_cast<int32_t>(v);
    }
    for (auto& g : gi) g = static_cast<int32_t>(rng() % G);
    q.set_i32(m + ".qzeros", qz);
    q.set_i32(m + ".g_idx", gi);
    const std::vector<int32_t> qv = q.i32(m + ".qweight");
    std::vector<float> w(N * K);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const uint32_t code = (static_cast<uint32_t>(qv[(k / 8) * N + n]) >> (4 * (k % 8))) & 15u;
        const int64_t g = gi[k];
        const uint32_t zero = ((static_cast<uint32_t>(qz[g * (N / 8) + n / 8]) >> (4 * (n % 8))) & 15u) + 1;
        uint16_t h;
        std::memcpy(&h, &sc.bytes[2 * (g * N + n)], 2);
        w[n * K + k] = f16_to_f32(h) * (static_cast<float>(code) - static_cast<float>(zero));
      }
    for (const char* leaf : {".qweight", ".qzeros", ".scales", ".g_idx"}) d.t.erase(m + leaf);
    std::vector<uint8_t> bytes(w.size() * 4);
    std::memcpy(bytes.data(), w.data(), bytes.size());
    d.t[m + ".weight"] = {DType::F32, {N, K}, std::move(bytes)};
  }
  LoadOptions o;
  o.threads = 2;
  const std::string qdir = q.write("asym_gptq"), ddir = d.write("asym_dense");
  auto mq = Model::load(qdir, o);
  auto md = Model::load(ddir, o);
  const std::vector<float> lq = logits_of(*mq, fixture("gptq")), ld = logits_of(*md, fixture("gptq"));
  Diff diff = compare(lq.data(), ld.data(), ld.size());
  std::printf("  asym GPTQ + random g_idx vs dequantized F32: rel-L2 %.3e max-abs %.3e\n", diff.rel_l2, diff.max_abs);
  // Two fp32 computations in different orders (the GPTQ prefill panels sum each
  // output in one sequential chain): ~1e-5 apart; a layout mistake is O(1).
  EXPECT_LT(diff.rel_l2, 3e-5);
  fs::remove_all(qdir);
  fs::remove_all(ddir);
}

TEST(Loader, DenseInt8StaysClose) {
  LoadOptions o;
  o.threads = 2;
  o.dense_int8 = true;
  auto m = Model::load(fixture("bf16"), o);
  const Golden g(fixture("bf16"));
  const std::vector<int> ids = g.i32("p0.input_ids");
  auto s = m->new_sequence();
  ForwardTrace tr;
  run(*m, *s, ids, true, &tr);
  const int64_t H = m->config().text.hidden_size;
  const std::vector<float> lo = g.f32("p0.layer_outputs");
  for (size_t L = 1; L < tr.layer_outputs.size(); ++L) {
    Diff d = compare(tr.layer_outputs[L].data(), lo.data() + L * ids.size() * H, ids.size() * H);
    std::printf("  dense int8: residual after layer %zu     rel-L2 %.3e max-abs %.3e\n", L - 1, d.rel_l2, d.max_abs);
    if (L == 1) {
      EXPECT_LT(d.rel_l2, 2e-2);
    }
  }
  EXPECT_LT(m->weight_bytes(), cached_model(fixture("bf16")).weight_bytes());
}

TEST(Loader, BrokenCheckpointsNameTheTensor) {
  {
    Editable e(fixture("bf16"));
    e.t.erase(kLM + "layers.2.linear_attn.dt_bias");
    expect_load_error(e.write("missing"), {"layers.2.linear_attn.dt_bias", "missing"});
  }
  {
    Editable e(fixture("bf16"));
    Entry& q = e.t.at(kLM + "layers.3.self_attn.q_proj.weight");
    q.shape = {q.shape[0] / 2, q.shape[1] * 2};
    expect_load_error(e.write("shape"), {"layers.3.self_attn.q_proj.weight", "shape"});
  }
  {
    Editable e(fixture("bf16"));
    const std::string p = kLM + "layers.1.mlp.experts.";
    e.t[p + "0.gate_proj.weight"] = e.t.at(kLM + "layers.1.mlp.shared_expert.gate_proj.weight");
    expect_load_error(e.write("both_experts"), {"layers.1.mlp.experts", "both"});
  }
  {
    Editable e(fixture("bf16"));
    e.t.at(kLM + "layers.0.input_layernorm.weight").dtype = DType::I16;
    expect_load_error(e.write("dtype"), {"layers.0.input_layernorm.weight", "I16"});
  }
  {
    Editable e(fixture("gptq"));
    e.t.erase(kLM + "layers.5.mlp.experts.7.down_proj.scales");
    expect_load_error(e.write("gptq_missing"), {"layers.5.mlp.experts.7.down_proj.scales"});
  }
  {
    Editable e(fixture("bf16"));
    e.t.erase("lm_head.weight");
    expect_load_error(e.write("no_lm_head"), {"lm_head.weight"});
  }
}

// The huge-page copy of the dense weights (model/resident.h) is made in 16 MiB
// chunks whose source pages are dropped as they are copied: an lm_head of
// 38 MB (three chunks, the last one partial, at an arbitrary file offset) must
// come out identical to the mapped checkpoint, so the logits match bit for bit.
TEST(Loader, ResidentCopyEqualsMappedWeights) {
  SynthOptions so;
  so.layers = 4;
  so.hidden = 64;
  so.vocab = 300001;
  so.experts = 4, so.experts_per_tok = 2;
  so.moe_intermediate = 32, so.shared_intermediate = 32;
  so.heads = 2, so.kv_heads = 1, so.head_dim = 32;
  so.linear_key_heads = 2, so.linear_value_heads = 2, so.linear_key_dim = 32, so.linear_value_dim = 32;
  so.max_position_embeddings = 4096;
  const std::string dir = (fs::temp_directory_path() / "qinfer_model_test_resident").string();
  fs::remove_all(dir);
  write_synthetic_checkpoint(dir, so);
  LoadOptions o;
  o.threads = 2;
  o.resident_dense = true;
  auto resident = Model::load(dir, o);
  o.resident_dense = false;
  auto mapped = Model::load(dir, o);
  const std::vector<int> ids = {5, 300000, 17, 123456, 299999};
  auto a = resident->new_sequence(), b = mapped->new_sequence();
  const std::vector<float> la = run(*resident, *a, ids), lb = run(*mapped, *b, ids);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
  fs::remove_all(dir);
}

TEST(Loader, MtpLoadedOnRequestAndStateShapes) {
  LoadOptions o;
  o.threads = 2;
  o.load_mtp = true;
  auto m = Model::load(fixture("gptq"), o);
  EXPECT_TRUE(m->has_mtp());
  EXPECT_FALSE(cached_model(fixture("gptq")).has_mtp());
  // A state of one model is refused by a model with different caches.
  auto foreign = m->new_sequence();
  std::vector<int> ids = {1};
  std::vector<float> logits(m->config().text.vocab_size);
  EXPECT_THROW(cached_model(fixture("gptq")).forward({{foreign.get(), ids.data(), 1, logits.data(), false}}), Error);
}

}  // namespace
}  // namespace qinfer::test
