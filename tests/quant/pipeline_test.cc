// The quantizer's plumbing (activation store, shard writer, calibration loader,
// failsafe threshold) and a whole run on the tiny BF16 fixture: the mission
// layout, GPTQ's output error below RTN's for every GPTQ module, clean errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "io/checkpoint.h"
#include "io/gptq.h"
#include "io/safetensors.h"
#include "model/linear.h"
#include "model/model.h"
#include "quant/activation_store.h"
#include "quant/calibration.h"
#include "quant/quantizer.h"
#include "quant/shard_writer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qinfer::quant {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("qinfer_quant_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string data(const std::string& name) { return std::string(QINFER_SOURCE_DIR) + "/tests/data/quant/" + name; }
std::string fixture(const std::string& name) { return std::string(QINFER_FIXTURES_DIR) + "/text/" + name; }

void write_file(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ActivationStore, SpillsOverBudgetAndReadsBack) {
  const fs::path d = temp_dir("store");
  const int64_t H = 5;
  ActivationStore st(H, 3 * H * sizeof(float), (d / "spill").string());   // room for 3 rows in memory
  std::vector<std::vector<float>> samples = {std::vector<float>(2 * H), std::vector<float>(4 * H),
                                             std::vector<float>(1 * H)};
  float v = 0;
  for (auto& s : samples)
    for (auto& x : s) x = v++;
  st.begin_sample(2);
  st.append(samples[0].data(), 2);
  st.begin_sample(4);                        // does not fit: spilled, written in two pieces
  st.append(samples[1].data(), 1);
  st.append(samples[1].data() + H, 3);
  st.begin_sample(1);                        // fits the rest of the budget
  st.append(samples[2].data(), 1);
  EXPECT_EQ(st.memory_bytes(), 3 * H * sizeof(float));
  EXPECT_EQ(st.spilled_bytes(), 4 * H * sizeof(float));
  for (size_t s = 0; s < 3; ++s) {
    std::vector<float> got(samples[s].size());
    st.read(s, 0, st.rows(s), got.data());
    EXPECT_EQ(got, samples[s]) << s;
  }
  std::vector<float> part(2 * H);
  st.read(1, 1, 2, part.data());
  EXPECT_EQ(part, std::vector<float>(samples[1].begin() + H, samples[1].begin() + 3 * H));
  EXPECT_THROW(st.read(1, 3, 2, part.data()), Error);
  st.clear();
  EXPECT_EQ(st.samples(), 0u);
}

TEST(ShardWriter, ShardsWithIndexOrOneFile) {
  for (int64_t shard : {int64_t{1}, int64_t{1} << 30}) {
    const fs::path d = temp_dir("shards" + std::to_string(shard));
    write_file(d / "config.json", "{}");
    ShardWriter w(d.string(), shard);
    std::vector<uint8_t> a = {1, 2, 3, 4}, b = {9, 8, 7, 6, 5, 4, 3, 2};
    w.add("x.a", DType::I32, {1}, a);
    w.flush_if_full();
    w.add("x.b", DType::I32, {2}, b);
    w.flush_if_full();
    const int64_t total = w.finish();
    EXPECT_EQ(total, 12);
    const bool sharded = shard == 1;
    EXPECT_EQ(fs::exists(d / "model.safetensors.index.json"), sharded);
    EXPECT_EQ(fs::exists(d / "model-00002-of-00002.safetensors"), sharded);
    EXPECT_EQ(fs::exists(d / "model.safetensors"), !sharded);
    for (const auto& e : fs::directory_iterator(d)) EXPECT_NE(e.path().extension(), ".partial");
    auto ck = Checkpoint::open(d.string());
    ASSERT_TRUE(ck->has("x.a") && ck->has("x.b"));
    EXPECT_EQ(std::vector<uint8_t>(ck->get("x.b").data, ck->get("x.b").data + 8), b);
  }
}

TEST(Calibration, JsonlIdsRoundRobinCutAndDropped) {
  const fs::path d = temp_dir("calib");
  auto ids = [](int first, int n) {
    std::string s = "{\"input_ids\": [";
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(first + i);
    return s + "]}\n";
  };
  write_file(d / "a.jsonl", ids(100, 20) + "\n" + ids(200, 5) + ids(300, 12));   // the 5-token row is dropped
  write_file(d / "b.jsonl", ids(400, 30) + ids(500, 11));
  CalibrationOptions o;
  o.files = {(d / "a.jsonl").string(), (d / "b.jsonl").string()};
  o.samples = 3;
  o.seq_len = 16;
  o.vocab_size = 1000;
  CalibrationSet s = load_calibration(o);
  ASSERT_EQ(s.samples.size(), 3u);
  EXPECT_EQ(s.samples[0].front(), 100);   // a1, b1, a2
  EXPECT_EQ(s.samples[0].size(), 16u);    // cut to seq_len
  EXPECT_EQ(s.samples[1].front(), 400);
  EXPECT_EQ(s.samples[2].front(), 300);
  EXPECT_EQ(s.total_tokens, 16 + 16 + 12);
  o.samples = 100;
  s = load_calibration(o);
  EXPECT_EQ(s.samples.size(), 4u);
  EXPECT_EQ(s.samples_per_file, (std::vector<int64_t>{2, 2}));

  write_file(d / "empty.jsonl", "");
  o.files = {(d / "a.jsonl").string(), (d / "empty.jsonl").string()};
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("empty.jsonl: no calibration sample"), std::string::npos);
  write_file(d / "bad.jsonl", ids(990, 20));
  o.files = {(d / "bad.jsonl").string()};
  o.vocab_size = 995;
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("bad.jsonl:1: token id 995"), std::string::npos);
  write_file(d / "text.jsonl", "{\"text\": \"hello\"}\n");
  o.files = {(d / "text.jsonl").string()};
  o.model_dir = (d / "no-model").string();
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("text.jsonl:1: text calibration data needs the model's tokenizer"),
            std::string::npos);
  write_file(d / "junk.jsonl", "{\"foo\": 1}\n");
  o.files = {(d / "junk.jsonl").string()};
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("junk.jsonl:1: a calibration line needs"), std::string::npos);
  o.files = {(d / "missing.jsonl").string()};
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("missing.jsonl: cannot open"), std::string::npos);
  // A .json file (an array, say) and a binary file are refused, not read as text.
  write_file(d / "data.json", "[{\"text\": \"hello world\"}]");
  o.files = {(d / "data.json").string()};
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("data.json: a .json file is not read as calibration data"),
            std::string::npos);
  write_file(d / "data.txt.gz", std::string("\x1f\x8b\x08\0\0\0\0\0", 8) + "rest");
  o.files = {(d / "data.txt.gz").string()};
  EXPECT_NE(error_of([&] { load_calibration(o); }).find("data.txt.gz: not a text file"), std::string::npos);
}

// Text, JSONL text and chat messages with the real tokenizer and chat template
// (the copy in assets/, which the demo model uses too).
TEST(Calibration, TextAndChatWithTheRealTokenizer) {
  const std::string tok = std::string(QINFER_SOURCE_DIR) + "/assets/tokenizer/qwen3.5";
  const fs::path d = temp_dir("calib_text");
  write_file(d / "chat.jsonl",
             "{\"messages\": [{\"role\": \"user\", \"content\": \"Write a function that adds two numbers.\"}, "
             "{\"role\": \"assistant\", \"content\": \"def add(a, b):\\n    return a + b\"}]}\n");
  CalibrationOptions o;
  o.files = {data("c4_slice.jsonl"), data("wikitext_slice.txt"), (d / "chat.jsonl").string()};
  o.samples = 6;
  o.seq_len = 64;
  o.vocab_size = 248320;
  o.model_dir = tok;
  CalibrationSet s = load_calibration(o);
  ASSERT_EQ(s.samples.size(), 6u);
  EXPECT_EQ(s.samples_per_file[2], 1);
  EXPECT_EQ(s.samples[0].size(), 64u);
  // The chat sample starts with <|im_start|> (248045), rendered by the template, and
  // holds both turns, the assistant's answer included.
  EXPECT_EQ(s.samples[2].front(), 248045);
  const Tokenizer tk = Tokenizer::load(tok);
  const std::string chat = tk.decode(s.samples[2]);
  EXPECT_NE(chat.find("<|im_start|>user\nWrite a function that adds two numbers.<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos) << chat;
  EXPECT_NE(chat.find("def add(a, b):\n    return a + b<|im_end|>"), std::string::npos) << chat;
  // A JSONL "text" sample is the tokenizer's encoding of that text, cut to --seq-len.
  std::ifstream c4(data("c4_slice.jsonl"));
  std::string line;
  std::getline(c4, line);
  std::vector<int> want = tk.encode(nlohmann::json::parse(line)["text"].get<std::string>(), false);
  want.resize(64);
  EXPECT_EQ(s.samples[0], want);
}

TEST(Failsafe, Threshold) {
  EXPECT_DOUBLE_EQ(failsafe_threshold("0.5%", 10000), 50.0);
  EXPECT_DOUBLE_EQ(failsafe_threshold("120", 10000), 120.0);
  EXPECT_GT(failsafe_threshold("true", 10), 0.0);
  EXPECT_LT(failsafe_threshold("true", 10), 1.0);
  EXPECT_LT(failsafe_threshold("off", 10), 0.0);
  EXPECT_LT(failsafe_threshold("0", 10), 0.0);
  EXPECT_THROW(failsafe_threshold("lots", 10), Error);
  EXPECT_THROW(failsafe_threshold("-1%", 10), Error);
}

struct TensorSummary {
  std::string dtype;
  std::vector<int64_t> shape;
  bool operator==(const TensorSummary&) const = default;
};

std::map<std::string, TensorSummary> census(const std::string& dir) {
  std::map<std::string, TensorSummary> m;
  auto ck = Checkpoint::open(dir);
  for (const auto& [name, t] : ck->all()) m[name] = {dtype_name(t->dtype), t->shape};
  return m;
}

// A run on a tiny fixture with the calibration file in tests/data/quant, written to d/out.
QuantizeOptions tiny_options(const std::string& model, const fs::path& d, int64_t samples, int64_t seq_len) {
  QuantizeOptions o;
  o.model_dir = fixture(model);
  o.out_dir = (d / "out").string();
  o.calibration.files = {data("tiny_calibration.jsonl")};
  o.calibration.samples = samples;
  o.calibration.seq_len = seq_len;
  return o;
}

TEST(Quantize, TinyFixtureHasTheMissionLayoutAndBeatsRtn) {
  const fs::path d = temp_dir("tiny");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/bf16", d, 64, 256);
  o.compare_rtn = true;
  o.activation_budget = 64 << 10;   // most samples spill to the temporary file
  o.hessian_budget = 5 * 64 * 64 * 4;   // five experts' Hessians at a time: several passes per subset
  const QuantizeReport r = quantize_checkpoint(o);
  EXPECT_GT(r.spilled_bytes, 0u);
  EXPECT_EQ(r.quantized_modules, 8 * 16 * 3);
  // Same tensors, dtypes and shapes as the mission-layout GPTQ fixture.
  EXPECT_EQ(census(o.out_dir), census(fixture("qwen35moe-tiny-s1/gptq")));
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "out");   // no partial folder left
  int64_t gptq = 0, failsafe = 0;
  for (const auto& m : r.modules) {
    ASSERT_FALSE(m.skipped);
    EXPECT_EQ(m.failsafe, static_cast<double>(m.tokens) < r.failsafe_threshold) << m.layer << " " << m.expert;
    if (m.failsafe) {
      ++failsafe;
      continue;
    }
    ++gptq;
    EXPECT_FALSE(m.no_inverse);
    EXPECT_LT(m.err, m.err_rtn) << "layer " << m.layer << " expert " << m.expert << " " << m.proj;
  }
  EXPECT_EQ(failsafe, r.failsafe_modules);
  EXPECT_GT(gptq, 300);
  // config.json and quantize_config.json carry the same quantization_config.
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(fs::path(o.out_dir) / "config.json"));
  nlohmann::json qc = nlohmann::json::parse(std::ifstream(fs::path(o.out_dir) / "quantize_config.json"));
  EXPECT_EQ(cfg["quantization_config"], qc);
  EXPECT_EQ(qc["bits"], 4);
  EXPECT_EQ(qc["group_size"], 32);
  EXPECT_EQ(qc["checkpoint_format"], "gptq");
  EXPECT_EQ(qc["meta"]["act_group_aware"], true);
  EXPECT_EQ(qc["meta"]["qinfer"]["failsafe_modules"], r.failsafe_modules);
  // qinfer loads it and runs it.
  auto model = Model::load(o.out_dir);
  auto st = model->new_sequence();
  std::vector<int> ids = {1, 2, 3, 4};
  std::vector<float> logits(512);
  model->forward({{st.get(), ids.data(), 4, logits.data(), false}});
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

// The stored int32/f16 words of one tensor of a checkpoint.
template <typename T>
std::vector<T> words(const Checkpoint& ck, const std::string& name) {
  const TensorInfo& t = ck.get(name);
  std::vector<T> v(t.nbytes / sizeof(T));
  std::memcpy(v.data(), t.data, t.nbytes);
  return v;
}

// A token-count threshold between the experts' counts: the experts below it are
// rounded to nearest from their original weights (no Hessian), all three of their
// projections, and counted; the rest get GPTQ. The progress callback advances
// through the calibration passes as well as the modules and ends at its total.
TEST(Quantize, FailsafeRtnForExpertsBelowTheThreshold) {
  const fs::path d = temp_dir("failsafe");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/bf16", d, 8, 64);
  o.failsafe = "110";   // 512 tokens, top 4 of 16 experts: 128 rows per expert on average
  std::vector<std::pair<double, double>> updates;
  o.on_progress = [&](double done, double total) { updates.emplace_back(done, total); };
  const QuantizeReport r = quantize_checkpoint(o);
  ASSERT_EQ(r.calibration_tokens, 512);
  EXPECT_DOUBLE_EQ(r.failsafe_threshold, 110.0);
  std::map<std::pair<int, int>, std::set<bool>> per_expert;   // (layer, expert) -> failsafe flags
  int64_t failsafe = 0;
  for (const auto& m : r.modules) {
    EXPECT_EQ(m.failsafe, m.tokens < 110) << m.layer << " " << m.expert << " " << m.proj << " " << m.tokens;
    per_expert[{m.layer, m.expert}].insert(m.failsafe);
    failsafe += m.failsafe;
  }
  EXPECT_EQ(failsafe, r.failsafe_modules);
  ASSERT_GT(r.failsafe_modules, 0) << "the threshold must split the experts";
  ASSERT_LT(r.failsafe_modules, r.quantized_modules) << "the threshold must split the experts";
  EXPECT_EQ(r.failsafe_modules % 3, 0);
  for (const auto& [key, flags] : per_expert) EXPECT_EQ(flags.size(), 1u) << "all projections of an expert agree";

  // Failsafe modules hold exactly RTN of the original BF16 weights; GPTQ ones differ from it.
  auto src = Checkpoint::open(o.model_dir);
  auto out = Checkpoint::open(o.out_dir);
  const int64_t H = 64, I = 32;
  int checked_rtn = 0, checked_gptq = 0;
  for (const auto& m : r.modules) {
    if (m.proj != "gate_proj" && m.proj != "down_proj") continue;
    const std::string ep = "model.language_model.layers." + std::to_string(m.layer) + ".mlp.experts.";
    const bool down = m.proj == "down_proj";
    const TensorInfo& t = src->get(ep + (down ? "down_proj" : "gate_up_proj"));
    const int64_t N = down ? H : I, K = down ? I : H;
    std::vector<float> w(static_cast<size_t>(N * K));
    model::to_f32(t.dtype, t.data + m.expert * (down ? H * I : 2 * I * H) * 2, N * K, w.data());
    const GptqPacked p = pack_gptq(quantize_rtn(w.data(), N, K, o.spec).w, false);
    const std::string mod = ep + std::to_string(m.expert) + "." + m.proj;
    const bool same = words<int32_t>(*out, mod + ".qweight") == p.qweight &&
                      words<uint16_t>(*out, mod + ".scales") == p.scales_f16;
    EXPECT_EQ(same, m.failsafe) << mod;
    (m.failsafe ? checked_rtn : checked_gptq)++;
  }
  EXPECT_GT(checked_rtn, 0);
  EXPECT_GT(checked_gptq, 0);
  nlohmann::json qc = nlohmann::json::parse(std::ifstream(fs::path(o.out_dir) / "quantize_config.json"));
  EXPECT_EQ(qc["meta"]["qinfer"]["failsafe_modules"], r.failsafe_modules);
  EXPECT_EQ(qc["meta"]["failsafe"]["threshold"], "110");
  EXPECT_EQ(qc["meta"]["failsafe"]["strategy"], "rtn");

  ASSERT_FALSE(updates.empty());
  for (size_t i = 1; i < updates.size(); ++i) {
    EXPECT_GE(updates[i].first, updates[i - 1].first) << i;
    EXPECT_EQ(updates[i].second, updates[0].second);
  }
  EXPECT_DOUBLE_EQ(updates.back().first, updates.back().second);
  // One update per expert and subset (gate+up, down) and one per calibration batch:
  // the 512 tokens are one batch, 2 Hessian passes per layer and 7 replays.
  EXPECT_EQ(updates.size(), static_cast<size_t>(8 * 16 * 2 + 8 * 2 + 7));
}

TEST(Quantize, BadInputsAreClearErrors) {
  const fs::path d = temp_dir("bad");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/gptq", d, 4, 64);
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("quantize needs the BF16 original"), std::string::npos);
  o.model_dir = fixture("qwen35moe-tiny-s2/bf16");
  o.spec.group_size = 48;
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("--group-size 48 does not divide"), std::string::npos);
  o.spec.group_size = 32;
  write_file(d / "empty.txt", "");
  o.calibration.files = {(d / "empty.txt").string()};
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("empty.txt"), std::string::npos);
  fs::create_directories(o.out_dir);
  o.calibration.files = {data("tiny_calibration.jsonl")};
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("already exists"), std::string::npos);
  fs::remove_all(o.out_dir);
  o.failsafe = "lots";
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("--failsafe-rtn 'lots'"), std::string::npos);
  o.failsafe = "0.5%";
  o.layers = 0;
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("--layers 0"), std::string::npos);
  EXPECT_FALSE(fs::exists(o.out_dir));
  for (const auto& e : fs::directory_iterator(d)) EXPECT_NE(e.path().filename().string().find("partial"), 0u);
}

// Without the failsafe, experts the router never sent a token to stay BF16 (their
// slices of the fused tensors, byte for byte, as per-expert .weight tensors) with a
// "-:" dynamic rule each, as GPTQModel does; qinfer loads the mixed result.
TEST(Quantize, FailsafeOffLeavesUnroutedExpertsBf16) {
  const fs::path d = temp_dir("unrouted");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/bf16", d, 1, 11);   // 11 tokens: 44 routings per layer
  o.failsafe = "off";
  const QuantizeReport r = quantize_checkpoint(o);
  ASSERT_GT(r.skipped_modules, 0);
  EXPECT_EQ(r.skipped_modules % 3, 0);
  EXPECT_EQ(r.failsafe_modules, 0);
  EXPECT_EQ(r.quantized_modules + r.skipped_modules, 8 * 16 * 3);
  nlohmann::json qc = nlohmann::json::parse(std::ifstream(fs::path(o.out_dir) / "quantize_config.json"));
  EXPECT_TRUE(qc["meta"]["failsafe"].is_null());
  auto src = Checkpoint::open(o.model_dir);
  auto out = Checkpoint::open(o.out_dir);
  const int64_t H = 64, I = 32;
  for (const auto& m : r.modules) {
    if (!m.skipped) continue;
    EXPECT_EQ(m.tokens, 0);
    const std::string ep = "model.language_model.layers." + std::to_string(m.layer) + ".mlp.experts.";
    const std::string mod = ep + std::to_string(m.expert) + "." + m.proj;
    std::string rule = "-:";
    for (char c : mod) rule += c == '.' ? std::string("\\.") : std::string(1, c);
    EXPECT_TRUE(qc["dynamic"].contains(rule)) << rule;
    EXPECT_FALSE(out->has(mod + ".qweight")) << mod;
    const TensorInfo& w = out->get(mod + ".weight");
    const bool down = m.proj == "down_proj";
    EXPECT_EQ(w.shape, (down ? std::vector<int64_t>{H, I} : std::vector<int64_t>{I, H}));
    const TensorInfo& f = src->get(ep + (down ? "down_proj" : "gate_up_proj"));
    const size_t off = 2 * static_cast<size_t>(down ? m.expert * H * I : m.expert * 2 * I * H + (m.proj == "up_proj" ? I * H : 0));
    EXPECT_TRUE(w.nbytes == static_cast<size_t>(2 * H * I) && std::equal(w.data, w.data + w.nbytes, f.data + off)) << mod;
  }
  auto model = Model::load(o.out_dir);
  auto st = model->new_sequence();
  std::vector<int> ids = {1, 2, 3, 4};
  std::vector<float> logits(512);
  model->forward({{st.get(), ids.data(), 4, logits.data(), false}});
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

// A NaN in one expert's BF16 weights is an error naming the tensor, expert and
// position, and no output folder is left.
TEST(Quantize, NonFiniteExpertWeightIsAnError) {
  const fs::path d = temp_dir("nan");
  auto src = Checkpoint::open(fixture("qwen35moe-tiny-s1/bf16"));
  SafetensorsWriter w;
  const std::string bad = "model.language_model.layers.2.mlp.experts.down_proj";
  for (const auto& [name, t] : src->all()) {
    std::vector<uint8_t> bytes(t->data, t->data + t->nbytes);
    if (name == bad) {   // expert 5, row 3, column 7 of its [64, 32] down_proj: BF16 NaN 0x7fc0
      const size_t at = 2 * (5 * 64 * 32 + 3 * 32 + 7);
      bytes[at] = 0xc0;
      bytes[at + 1] = 0x7f;
    }
    w.add(name, t->dtype, t->shape, std::move(bytes));
  }
  w.add_metadata("format", "pt");
  fs::create_directories(d / "model");
  w.write((d / "model" / "model.safetensors").string());
  fs::copy_file(fixture("qwen35moe-tiny-s1/bf16/config.json"), d / "model" / "config.json");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/bf16", d, 4, 64);
  o.model_dir = (d / "model").string();
  const std::string err = error_of([&] { quantize_checkpoint(o); });
  EXPECT_NE(err.find("tensor " + bad + ": expert 5 down_proj has a non-finite weight (nan) at row 3, column 7"),
            std::string::npos) << err;
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "model") << "no output, no partial";
}

TEST(Quantize, CancelStopsAndRemovesTheTemporaryFolder) {
  const fs::path d = temp_dir("cancel");
  QuantizeOptions o = tiny_options("qwen35moe-tiny-s1/bf16", d, 4, 64);
  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  EXPECT_NE(error_of([&] { quantize_checkpoint(o); }).find("interrupted"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(d)) << "no output and no partial folder";
}

}  // namespace
}  // namespace qinfer::quant
