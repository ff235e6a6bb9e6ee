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
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "run_shell.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

using ShRun = test::ShellRun;
ShRun sh(const std::string& cmd) { return test::run_shell(cmd); }

std::string bin() { return QINFER_BINARY; }
std::string fixture(const std::string& n) { return std::string(QINFER_FIXTURES_DIR) + "/text/" + n; }
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

// The census part of `qinfer inspect` (tensor counts and dtypes), without the folder name.
std::string census(const std::string& dir) {
  ShRun r = sh(bin() + " inspect " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  std::string out;
  std::stringstream ss(r.out);
  std::string line;
  while (std::getline(ss, line))
    if (line.find(dir) == std::string::npos && line.find("[qinfer]") == std::string::npos) out += line + "\n";
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
