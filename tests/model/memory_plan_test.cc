// The memory plan on made-up censuses: placement per mode, the context lowered
// to fit when not given, file-backed experts with a hot budget, and refusals
// that name the flag that would fit. Then the census of a real fixture.
#include <gtest/gtest.h>

#include "io/checkpoint.h"
#include "io/config.h"
#include "model/layers.h"
#include "model/memory_plan.h"
#include "model/model.h"
#include "util/error.h"

namespace qinfer::model {
namespace {

constexpr double GB = 1e9;

// Shaped like the 40-layer checkpoint (GPTQ experts), rounded.
WeightCensus gptq_model() {
  WeightCensus w;
  w.experts = 17.0 * GB;
  w.expert_count = 40 * 256;
  w.experts_gptq = true;
  w.dense = 3.0 * GB;
  w.dense_int8 = 1.5 * GB;
  w.small = 0.05 * GB;
  w.embed = 1.0 * GB;
  w.lm_head = 1.0 * GB;
  w.lm_head_int8 = 0.5 * GB;
  return w;
}

WeightCensus bf16_experts_model() {
  WeightCensus w = gptq_model();
  w.experts = 60.0 * GB;
  w.experts_gptq = false;
  return w;
}

StateCensus state() {
  StateCensus s;
  s.kv_per_token = 40960;      // 10 full layers x 2 x 512 x fp32
  s.per_sequence = 0.06 * GB;  // DeltaNet states
  s.model_max_len = 262144;
  return s;
}

PlanRequest req(double budget_gb, int64_t max_model_len = 0) {
  PlanRequest r;
  r.max_model_len = max_model_len;
  r.budget = budget_gb * GB;
  r.budget_given = true;
  return r;
}

// The same with the experts resident (auto would make GPTQ experts file-backed when short).
PlanRequest req_resident(double budget_gb, int64_t max_model_len = 0) {
  PlanRequest r = req(budget_gb, max_model_len);
  r.experts = ExpertsPlacement::kResident;
  return r;
}

// The 12-bit BF16 form (ops/bf16c.h): dense matrices and the lm_head counted at
// kBf16cPlanShare of their size, named in the line; a budget the BF16 copy misses fits.
TEST(MemoryPlan, Bf16cCountsTheSmallerForm) {
  PlanRequest r = req_resident(23.5, 4096);
  const MemoryPlan plain = plan_memory(gptq_model(), state(), r);
  r.dense_bf16c = true;
  const MemoryPlan c = plan_memory(gptq_model(), state(), r);
  EXPECT_NEAR(c.bf16c, (3.0 + 1.0) * GB * kBf16cPlanShare, 1.0);
  EXPECT_NEAR(plain.copied - c.copied, (3.0 + 1.0) * GB * (1 - kBf16cPlanShare), 1.0);
  EXPECT_NE(c.line().find("12-bit BF16"), std::string::npos) << c.line();
  r.budget = (plain.need + c.need) / 2;
  EXPECT_TRUE(plan_memory(gptq_model(), state(), r).fits);
  r.dense_bf16c = false;
  EXPECT_FALSE(plan_memory(gptq_model(), state(), r).fits);
}

TEST(MemoryPlan, EverythingResidentWhenItFits) {
  PlanRequest r = req(64, 8192);
  const MemoryPlan p = plan_memory(gptq_model(), state(), r);
  ASSERT_TRUE(p.fits) << p.refusal;
  EXPECT_FALSE(p.experts_file_backed);
  EXPECT_DOUBLE_EQ(p.copied, (17.0 + 3.0 + 0.05 + 1.0) * GB);
  EXPECT_DOUBLE_EQ(p.mapped, 0);
  EXPECT_DOUBLE_EQ(p.kv, 8192 * 40960.0 + 0.06 * GB);
  EXPECT_DOUBLE_EQ(p.need, p.copied + p.mapped + p.kv + kRuntimeReserve);
  EXPECT_DOUBLE_EQ(p.reserve, kRuntimeReserve);
  EXPECT_NE(p.line().find("memory plan: budget 64.00 GB"), std::string::npos) << p.line();
  EXPECT_NE(p.line().find("1 x 8192 tokens"), std::string::npos) << p.line();
}

TEST(MemoryPlan, Int8ReencodesAndMmapMaps) {
  PlanRequest r = req(64, 4096);
  r.dense_int8 = true;
  const MemoryPlan a = plan_memory(gptq_model(), state(), r);
  EXPECT_DOUBLE_EQ(a.reencoded, 2.0 * GB);
  EXPECT_DOUBLE_EQ(a.copied, (17.0 + 2.0 + 0.05) * GB);
  r.dense_int8 = false;
  r.mmap_dense = true;
  const MemoryPlan b = plan_memory(gptq_model(), state(), r);
  EXPECT_DOUBLE_EQ(b.mapped, 4.0 * GB);     // dense + lm_head through the mapping
  EXPECT_DOUBLE_EQ(b.copied, 17.05 * GB);   // GPTQ experts are repacked in memory either way
}

TEST(MemoryPlan, TiedLmHeadStaysMapped) {
  WeightCensus w = gptq_model();
  w.lm_head_tied = true;
  PlanRequest r = req(64, 4096);
  const MemoryPlan p = plan_memory(w, state(), r);
  EXPECT_DOUBLE_EQ(p.mapped, 1.0 * GB);
  EXPECT_DOUBLE_EQ(p.copied, 20.05 * GB);
}

TEST(MemoryPlan, ContextNotGivenIsLoweredToFit) {
  const MemoryPlan p = plan_memory(gptq_model(), state(), req(24));   // 262144 tokens would need 10.7 GB of KV
  ASSERT_TRUE(p.fits) << p.refusal;
  EXPECT_TRUE(p.len_lowered);
  EXPECT_EQ(p.max_model_len % KvCache::kBlockTokens, 0);
  EXPECT_GE(p.max_model_len, kMinPlannedLen);
  EXPECT_LE(p.need, 24 * GB);
  // One more block would not fit.
  EXPECT_GT(p.need + KvCache::kBlockTokens * 40960.0, 24 * GB);
  EXPECT_NE(p.line().find("context lowered to fit"), std::string::npos);
}

TEST(MemoryPlan, ContextNotGivenAndNothingFitsReportsTheLeastNeed) {
  const MemoryPlan p = plan_memory(gptq_model(), state(), req_resident(19));
  ASSERT_FALSE(p.fits);
  EXPECT_EQ(p.max_model_len, kMinPlannedLen);
  EXPECT_NE(p.refusal.find("1 x 2048 tokens"), std::string::npos) << p.refusal;
}

TEST(MemoryPlan, GivenContextIsRefusedNamingTheFlags) {
  PlanRequest r = req_resident(24, 262144);
  const MemoryPlan p = plan_memory(gptq_model(), state(), r);
  ASSERT_FALSE(p.fits);
  EXPECT_NE(p.refusal.find("--max-model-len "), std::string::npos) << p.refusal;
  EXPECT_NE(p.refusal.find("--memory-budget-gb"), std::string::npos) << p.refusal;
  EXPECT_NE(p.refusal.find("budget is 24.00 GB"), std::string::npos) << p.refusal;
  // The suggested length really fits.
  const size_t at = p.refusal.find("--max-model-len ") + 16;
  PlanRequest r2 = r;
  r2.max_model_len = std::stoll(p.refusal.substr(at));
  EXPECT_TRUE(plan_memory(gptq_model(), state(), r2).fits);
}

TEST(MemoryPlan, Bf16DenseThatDoesNotFitSuggestsInt8) {
  PlanRequest tight = req_resident(21.3, 4096);
  const MemoryPlan q = plan_memory(gptq_model(), state(), tight);
  ASSERT_FALSE(q.fits);
  EXPECT_NE(q.refusal.find("--dense int8"), std::string::npos) << q.refusal;
  EXPECT_EQ(q.refusal.find("--max-model-len"), std::string::npos) << q.refusal;   // no length fits bf16
}

TEST(MemoryPlan, FewerSequences) {
  PlanRequest r = req_resident(30, 32768);
  r.max_num_seqs = 32;   // 32 x 1.3 GB of KV
  const MemoryPlan p = plan_memory(gptq_model(), state(), r);
  ASSERT_FALSE(p.fits);
  const size_t at = p.refusal.find("--max-num-seqs ");
  ASSERT_NE(at, std::string::npos) << p.refusal;
  PlanRequest r2 = r;
  r2.max_num_seqs = std::stoll(p.refusal.substr(at + 15));
  EXPECT_TRUE(plan_memory(gptq_model(), state(), r2).fits);
  r2.max_num_seqs += 1;
  EXPECT_FALSE(plan_memory(gptq_model(), state(), r2).fits);
}

TEST(MemoryPlan, DenseExpertsGoFileBackedWithAHotBudget) {
  PlanRequest r = req(24, 4096);
  const MemoryPlan p = plan_memory(bf16_experts_model(), state(), r);
  ASSERT_TRUE(p.fits) << p.refusal;
  ASSERT_TRUE(p.experts_file_backed);
  const double rest = (3.0 + 0.05 + 1.0) * GB + p.kv + kRuntimeReserve;
  EXPECT_DOUBLE_EQ(p.experts_hot, 24 * GB - rest);
  EXPECT_DOUBLE_EQ(p.experts_hot + p.experts_cold, 60 * GB);
  EXPECT_NE(p.line().find("experts file-backed"), std::string::npos) << p.line();
  EXPECT_FALSE(p.len_lowered);   // given: kept as given
  // Resident only: refused, naming the placement that fits and no length (none can help).
  r.experts = ExpertsPlacement::kResident;
  const MemoryPlan q = plan_memory(bf16_experts_model(), state(), r);
  EXPECT_FALSE(q.fits);
  EXPECT_NE(q.refusal.find("--experts auto"), std::string::npos) << q.refusal;
  EXPECT_EQ(q.refusal.find("--max-model-len"), std::string::npos) << q.refusal;
  EXPECT_EQ(q.refusal.find("--dense int8"), std::string::npos) << q.refusal;
}

TEST(MemoryPlan, GptqExpertsGoFileBackedWithAHotBudget) {
  // 12 GB: the 17 GB of repacked experts do not fit; auto keeps a hot pool of the rest.
  PlanRequest r = req(12, 4096);
  const MemoryPlan p = plan_memory(gptq_model(), state(), r);
  ASSERT_TRUE(p.fits) << p.refusal;
  ASSERT_TRUE(p.experts_file_backed);
  EXPECT_TRUE(p.experts_gptq);
  const double rest = (3.0 + 0.05 + 1.0) * GB + p.kv + kRuntimeReserve;
  EXPECT_DOUBLE_EQ(p.experts_hot, 12 * GB - rest);
  EXPECT_DOUBLE_EQ(p.experts_hot + p.experts_cold, 17 * GB);
  EXPECT_DOUBLE_EQ(p.copied, (3.0 + 0.05 + 1.0) * GB + p.experts_hot);   // the hot pool counts as copied
  EXPECT_NE(p.line().find("experts file-backed (GPTQ"), std::string::npos) << p.line();
  // Asked for: the same plan.
  r.experts = ExpertsPlacement::kFileBacked;
  EXPECT_DOUBLE_EQ(plan_memory(gptq_model(), state(), r).experts_hot, p.experts_hot);
  // Resident only: refused, naming --experts auto.
  r.experts = ExpertsPlacement::kResident;
  const MemoryPlan q = plan_memory(gptq_model(), state(), r);
  EXPECT_FALSE(q.fits);
  EXPECT_NE(q.refusal.find("--experts auto"), std::string::npos) << q.refusal;
  // Not even the rest fits: refused.
  const MemoryPlan z = plan_memory(gptq_model(), state(), req(3, 4096));
  EXPECT_FALSE(z.fits);
}

TEST(MemoryPlan, CensusOfAFixtureMatchesItsTensors) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/gptq";
  const ModelConfig cfg = load_config(dir);
  auto ck = Checkpoint::open(dir);
  const WeightCensus w = census_of(*ck, cfg, false, false);
  EXPECT_TRUE(w.experts_gptq);
  EXPECT_GT(w.experts, 0);
  EXPECT_GT(w.dense, 0);
  EXPECT_LT(w.dense_int8, w.dense);
  EXPECT_GT(w.embed, 0);
  EXPECT_EQ(w.expert_count, int64_t{cfg.text.num_hidden_layers} * cfg.text.num_experts);
  const StateCensus s = state_census(text_state_shape(cfg.text, false), cfg.text.max_position_embeddings,
                                     cfg.text.hidden_size);
  EXPECT_DOUBLE_EQ(s.kv_per_token, 2.0 * cfg.text.num_full_layers() * cfg.text.num_key_value_heads *
                                       cfg.text.head_dim * 4);
}

// With the MTP head (speculation) a sequence's share counts its verify buffers: at least
// what a sequence holds after verifying 1 + 4 tokens (the most --speculative-config asks).
TEST(MemoryPlan, PerSequenceCountsTheVerifyBuffers) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16";
  const ModelConfig cfg = load_config(dir);
  const StateCensus plain = state_census(text_state_shape(cfg.text, false), 1024, cfg.text.hidden_size);
  const StateCensus spec = state_census(text_state_shape(cfg.text, true), 1024, cfg.text.hidden_size);
  LoadOptions o;
  o.threads = 2;
  o.load_mtp = true;
  auto m = Model::load(dir, o);
  auto s = m->new_sequence();
  std::vector<int> ids = {1, 2, 3, 4, 5};
  std::vector<float> logits(ids.size() * cfg.text.vocab_size);
  m->forward({{s.get(), ids.data(), 5, logits.data(), true, nullptr, true}});
  double held = 0;
  for (int l = 0; l < s->shape().num_linear_layers; ++l) {
    const DeltaNetState& d = s->delta(l);
    held += static_cast<double>(d.spec_ssm.size() + d.spec_kv.size() + d.spec_g.size() + d.spec_beta.size() +
                                d.spec_conv.size()) * sizeof(float);
  }
  EXPECT_GT(held, 0);
  EXPECT_GE(spec.per_sequence - plain.per_sequence, held);
  EXPECT_LT(spec.per_sequence - plain.per_sequence, 1.5 * held);
}

// MTP drafts with "draft_lm_head": "int8" make an int8 copy of the lm_head rows they
// score on first use: the plan counts it (all rows, or draft_vocab of them), and not when
// --dense int8 already made the lm_head int8 or when MTP is not loaded.
TEST(MemoryPlan, MtpInt8DraftHeadIsCounted) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/gptq";
  const ModelConfig cfg = load_config(dir);
  auto ck = Checkpoint::open(dir);
  const double V = static_cast<double>(cfg.text.vocab_size), H = static_cast<double>(cfg.text.hidden_size);
  LoadOptions o;
  o.load_mtp = true;
  o.memory_budget = 64 * GB;
  o.max_model_len = 4096;
  const MemoryPlan plain = plan_for_options(*ck, cfg, o);
  EXPECT_EQ(plain.draft_head, 0);
  o.draft_int8 = true;
  const MemoryPlan full = plan_for_options(*ck, cfg, o);
  EXPECT_DOUBLE_EQ(full.draft_head, V * (H + 4));
  EXPECT_DOUBLE_EQ(full.copied - plain.copied, full.draft_head);
  EXPECT_DOUBLE_EQ(full.need - plain.need, full.draft_head);
  EXPECT_NE(full.line().find("MTP drafts' int8 lm_head"), std::string::npos) << full.line();
  o.draft_vocab = 100;
  EXPECT_DOUBLE_EQ(plan_for_options(*ck, cfg, o).draft_head, 100 * (H + 4));
  o.dense_int8 = true;
  EXPECT_EQ(plan_for_options(*ck, cfg, o).draft_head, 0);
  o.dense_int8 = false;
  o.load_mtp = false;
  EXPECT_EQ(plan_for_options(*ck, cfg, o).draft_head, 0);
  // A budget between the two needs: refused only with the copy, and the refusal names it.
  o.load_mtp = true;
  o.draft_vocab = 0;
  o.experts = ExpertsPlacement::kResident;
  o.memory_budget = (plain.need + full.need) / 2;
  EXPECT_TRUE(plan_for_options(*ck, cfg, o).fits == false);
  EXPECT_NE(plan_for_options(*ck, cfg, o).refusal.find("the MTP drafts' int8 lm_head"), std::string::npos);
  o.draft_int8 = false;
  EXPECT_TRUE(plan_for_options(*ck, cfg, o).fits);
}

// "draft_layer": "int8" (LoadOptions::draft_layer_int8) loads the MTP layer re-encoded as
// int8 in place of its BF16 copy: the plan counts the int8 bytes (as under --dense int8),
// and they are what the loaded model holds.
TEST(MemoryPlan, MtpInt8LayerIsCounted) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16";
  const ModelConfig cfg = load_config(dir);
  auto ck = Checkpoint::open(dir);
  const WeightCensus w = census_of(*ck, cfg, true, false);
  ASSERT_GT(w.mtp, 0);
  EXPECT_LT(w.mtp_int8, 0.6 * w.mtp);
  EXPECT_GT(w.mtp_int8, 0.4 * w.mtp);
  LoadOptions o;
  o.load_mtp = true;
  o.memory_budget = 64 * GB;
  o.max_model_len = 4096;
  o.experts = ExpertsPlacement::kResident;
  const MemoryPlan bf16 = plan_for_options(*ck, cfg, o);
  o.draft_layer_int8 = true;
  const MemoryPlan int8 = plan_for_options(*ck, cfg, o);
  EXPECT_DOUBLE_EQ(bf16.copied - int8.copied, w.mtp - w.mtp_int8);
  o.threads = 2;
  o.draft_layer_int8 = false;
  const double bytes_bf16 = static_cast<double>(Model::load(dir, o)->weight_bytes());
  o.draft_layer_int8 = true;
  const double bytes_int8 = static_cast<double>(Model::load(dir, o)->weight_bytes());
  // What the loaded MTP head shrank by is what the plan says, up to the norms (counted
  // as stored, held as fp32).
  EXPECT_NEAR(bytes_bf16 - bytes_int8, w.mtp - w.mtp_int8, 0.02 * (w.mtp - w.mtp_int8));
}

}  // namespace
}  // namespace qinfer::model
