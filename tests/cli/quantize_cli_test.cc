// `qinfer quantize` end to end on the tiny BF16 fixture: GPTQ's perplexity is
// closer to the BF16 model's than RTN's (same code, every expert forced to the
// RTN failsafe), `qinfer inspect` gives the census of the mission-layout
// fixture, and a full disk (a file-size limit) is a clear error that leaves no
// output folder behind.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/safetensors.h"

#include "run_shell.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

using ShRun = test::ShellRun;
ShRun sh(const std::string& cmd) { return test::run_shell(cmd); }

std::string bin() { return QINFER_BINARY; }
std::string fixture(const std::string& n) { return std::string(QINFER_FIXTURES_DIR) + "/text/" + n; }
std::string mm_fixture(const std::string& n) { return std::string(QINFER_FIXTURES_DIR) + "/multimodal/" + n; }
std::string data(const std::string& n) { return std::string(QINFER_SOURCE_DIR) + "/tests/data/quant/" + n; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("qinfer_quantize_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

double ppl(const std::string& model, const std::string& ids) {
  ShRun r = sh(bin() + " perplexity --model " + model + " --ids " + ids + " --ctx 256 --stride 128");
  EXPECT_EQ(r.code, 0) << r.out;
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("ppl ([0-9.]+)"))) return NAN;
  return std::stod(m[1]);
}

// The census part of `qinfer inspect` (tensor counts and dtypes), without the folder name
// and without the memory-plan lines (their budget is the memory available at that moment).
std::string census(const std::string& dir) {
  ShRun r = sh(bin() + " inspect " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  std::string out;
  std::stringstream ss(r.out);
  std::string line;
  while (std::getline(ss, line))
    if (line.find(dir) == std::string::npos && line.find("[qinfer]") == std::string::npos &&
        line.find("memory plan: budget") == std::string::npos)
      out += line + "\n";
  return out;
}

TEST(QuantizeCli, GptqCloserToBf16ThanRtnAndSameCensus) {
  const fs::path d = temp_dir();
  const std::string base = bin() + " quantize --model " + fixture("qwen35moe-tiny-s1/bf16") + " --calibration " +
                           data("tiny_calibration.jsonl") + " --samples 64 --seq-len 256";
  fs::remove_all(d / "gptq");
  fs::remove_all(d / "rtn");
  ShRun g = sh(base + " --out " + (d / "gptq").string());
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_NE(g.out.find("quantized 384 modules"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("eta"), std::string::npos) << "progress shows an ETA";
  ShRun r = sh(base + " --failsafe-rtn 1000000000 --out " + (d / "rtn").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("quantized 384 modules (384 failsafe RTN"), std::string::npos) << r.out;

  const std::string ids = read_file(data("tiny_eval_ids.txt"));
  const double pb = ppl(fixture("qwen35moe-tiny-s1/bf16"), ids);
  const double pg = ppl((d / "gptq").string(), ids);
  const double pr = ppl((d / "rtn").string(), ids);
  std::printf("perplexity on held-out ids: bf16 %.4f gptq %.4f rtn %.4f\n", pb, pg, pr);
  EXPECT_LT(std::fabs(pg - pb), std::fabs(pr - pb));

  EXPECT_EQ(census((d / "gptq").string()), census(fixture("qwen35moe-tiny-s1/gptq")));
  fs::remove_all(d);
}

// A BF16 original with a vision tower, sharded in two files with an index: the text
// tensors of the tiny s1 BF16 fixture, the BF16 model.visual.* tensors of the mm-s1
// fixture (whose text part is the s1 GPTQ fixture), mm-s1's config.json without its
// quantization_config, and its preprocessor_config.json.
void write_vision_original(const fs::path& d) {
  fs::create_directories(d);
  auto text = Checkpoint::open(fixture("qwen35moe-tiny-s1/bf16"));
  auto mm = Checkpoint::open(mm_fixture("mm-s1"));
  SafetensorsWriter a, b;
  nlohmann::json map = nlohmann::json::object();
  int64_t total = 0;
  auto put = [&](SafetensorsWriter& w, const char* file, const TensorInfo& t) {
    w.add(t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
    map[t.name] = file;
    total += static_cast<int64_t>(t.nbytes);
  };
  for (const auto& [name, t] : text->all())
    put(name.rfind("mtp.", 0) == 0 ? b : a, name.rfind("mtp.", 0) == 0 ? "model-00002-of-00002.safetensors"
                                                                       : "model-00001-of-00002.safetensors", *t);
  for (const auto& [name, t] : mm->all())
    if (name.rfind("model.visual.", 0) == 0) put(b, "model-00002-of-00002.safetensors", *t);
  a.add_metadata("format", "pt");
  b.add_metadata("format", "pt");
  a.write((d / "model-00001-of-00002.safetensors").string());
  b.write((d / "model-00002-of-00002.safetensors").string());
  std::ofstream(d / "model.safetensors.index.json")
      << nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", map}}.dump(1);
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(mm_fixture("mm-s1/config.json")));
  cfg.erase("quantization_config");
  std::ofstream(d / "config.json") << cfg.dump(2);
  fs::copy_file(mm_fixture("mm-s1/preprocessor_config.json"), d / "preprocessor_config.json");
}

// Vision and MTP are copied unchanged (byte for byte) from a sharded original, and
// `qinfer inspect` gives the output the census of the mission-layout mm-s1 fixture.
TEST(QuantizeCli, ShardedOriginalWithVisionKeepsVisionAndMtpAndSameCensus) {
  const fs::path d = temp_dir() / "vision";
  fs::remove_all(d);
  write_vision_original(d / "bf16");
  ShRun q = sh(bin() + " quantize --model " + (d / "bf16").string() + " --calibration " +
               data("tiny_calibration.jsonl") + " --samples 8 --seq-len 64 --out " + (d / "q").string());
  ASSERT_EQ(q.code, 0) << q.out;
  EXPECT_NE(q.out.find("quantized 384 modules"), std::string::npos) << q.out;
  EXPECT_EQ(census((d / "q").string()), census(mm_fixture("mm-s1")));
  EXPECT_EQ(read_file((d / "q" / "preprocessor_config.json").string()),
            read_file(mm_fixture("mm-s1/preprocessor_config.json")));
  auto in = Checkpoint::open((d / "bf16").string());
  auto out = Checkpoint::open((d / "q").string());
  int copied = 0;
  for (const auto& [name, t] : in->all()) {
    if (name.rfind("model.visual.", 0) != 0 && name.rfind("mtp.", 0) != 0) continue;
    const TensorInfo* o = out->find(name);
    ASSERT_NE(o, nullptr) << name;
    EXPECT_EQ(o->dtype, t->dtype) << name;
    EXPECT_EQ(o->shape, t->shape) << name;
    EXPECT_TRUE(o->nbytes == t->nbytes && std::equal(t->data, t->data + t->nbytes, o->data)) << name;
    ++copied;
  }
  EXPECT_EQ(copied, 45 + 19);
  fs::remove_all(d);
}

// --asym writes gptq_v2 zeros and --desc-act permuted g_idx; qinfer loads both, and
// their perplexity stays near the BF16 model's (measured: +3.3 % and +5.8 % at
// 64 x 256 calibration tokens; a misread zero offset or g_idx would be far off).
TEST(QuantizeCli, AsymAndDescActOutputsLoadAndStayNearBf16) {
  const fs::path d = temp_dir() / "variants";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string ids = read_file(data("tiny_eval_ids.txt"));
  const double pb = ppl(fixture("qwen35moe-tiny-s1/bf16"), ids);
  for (const std::string flag : {"--asym", "--desc-act"}) {
    const std::string out = (d / flag.substr(2)).string();
    ShRun q = sh(bin() + " quantize --model " + fixture("qwen35moe-tiny-s1/bf16") + " --calibration " +
                 data("tiny_calibration.jsonl") + " --samples 64 --seq-len 256 " + flag + " --out " + out);
    ASSERT_EQ(q.code, 0) << q.out;
    nlohmann::json qc = nlohmann::json::parse(std::ifstream(out + "/quantize_config.json"));
    auto ck = Checkpoint::open(out);
    const TensorInfo& z = ck->get("model.language_model.layers.0.mlp.experts.0.gate_proj.qzeros");
    const TensorInfo& g = ck->get("model.language_model.layers.0.mlp.experts.0.gate_proj.g_idx");
    std::vector<int32_t> zw(z.nbytes / 4), gi(g.nbytes / 4);
    std::memcpy(zw.data(), z.data, z.nbytes);
    std::memcpy(gi.data(), g.data, g.nbytes);
    bool trivial_g = true, all_sym_zero = true;
    for (size_t k = 0; k < gi.size(); ++k) trivial_g = trivial_g && gi[k] == static_cast<int32_t>(k / 32);
    for (int32_t w : zw) all_sym_zero = all_sym_zero && w == 0x77777777;
    if (flag == "--asym") {
      EXPECT_EQ(qc["checkpoint_format"], "gptq_v2");
      EXPECT_EQ(qc["sym"], false);
      EXPECT_FALSE(all_sym_zero) << "asymmetric zeros vary";
      EXPECT_TRUE(trivial_g);
    } else {
      EXPECT_EQ(qc["desc_act"], true);
      EXPECT_EQ(qc["meta"]["act_group_aware"], false);
      EXPECT_TRUE(all_sym_zero);
      EXPECT_FALSE(trivial_g) << "desc_act: g_idx follows the activation order";
    }
    const double p = ppl(out, ids);
    std::printf("perplexity %s: %.4f (bf16 %.4f)\n", flag.c_str(), p, pb);
    EXPECT_LT(std::fabs(p - pb), 0.1 * pb) << flag;
  }
  fs::remove_all(d);
}

TEST(QuantizeCli, FullDiskIsAnErrorAndLeavesNoFolder) {
  const fs::path d = temp_dir() / "disk";
  fs::create_directories(d);
  // 200 KiB file-size limit: the first shard of the 1.6 MB output cannot be written.
  ShRun r = sh("bash -c 'ulimit -f 200; exec " + bin() + " quantize --model " + fixture("qwen35moe-tiny-s1/bf16") +
             " --calibration " + data("tiny_calibration.jsonl") + " --samples 8 --seq-len 64 --shard-mb 1 --out " +
             (d / "out").string() + "'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("write failed"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(d)) << "no output and no partial folder";
  fs::remove_all(d);
}

TEST(QuantizeCli, HelpAndUsageErrors) {
  ShRun h = sh(bin() + " quantize --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--failsafe-rtn"), std::string::npos);
  ShRun m = sh(bin() + " quantize --model " + fixture("qwen35moe-tiny-s1/bf16") + " --out /tmp/x");
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.out.find("--calibration"), std::string::npos) << m.out;
  ShRun top = sh(bin() + " --help");
  EXPECT_NE(top.out.find("quantize"), std::string::npos) << "quantize is listed";
}

}  // namespace
}  // namespace qinfer
