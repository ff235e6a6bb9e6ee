// The CLI contract that external checks call: `qinfer logits` and
// `qinfer generate --ids ... --print-ids` on every fixture against the golden
// outputs, and bad checkpoints exiting non-zero with a message that names the
// file and the tensor or key.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "run_shell.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

using RunResult = test::ShellRun;
RunResult run(const std::string& args) { return test::run_shell(std::string(QINFER_BINARY) + " " + args); }

std::string fixture(const std::string& name) { return std::string(QINFER_FIXTURES_DIR) + "/text/" + name; }

const std::vector<std::string> kFixtures = {"qwen35moe-tiny-s1/bf16", "qwen35moe-tiny-s1/gptq",
                                            "qwen35moe-tiny-s2/bf16", "qwen35moe-tiny-s2/gptq"};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string temp_path(const std::string& name) {
  auto d = fs::temp_directory_path() / ("qinfer_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

TEST(CliContract, LogitsMatchGoldenOnEveryFixture) {
  for (const auto& fx : kFixtures) {
    SafetensorsFile golden(fixture(fx) + "/golden.safetensors");
    std::map<std::string, const TensorInfo*> g;
    for (const auto& t : golden.tensors()) g[t.name] = &t;
    for (int p = 0; p < 3; ++p) {
      std::string pre = "p" + std::to_string(p) + ".";
      const TensorInfo* ids_t = g.at(pre + "input_ids");
      const TensorInfo* logits_t = g.at(pre + "logits");
      std::vector<int> ids(reinterpret_cast<const int32_t*>(ids_t->data),
                           reinterpret_cast<const int32_t*>(ids_t->data) + ids_t->numel());
      std::string out = temp_path("logits.f32");
      RunResult r = run("logits --model " + fixture(fx) + " --ids " + join(ids) + " --out " + out);
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      std::ifstream f(out, std::ios::binary);
      std::vector<float> got(static_cast<size_t>(logits_t->numel()));
      f.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 4));
      ASSERT_EQ(f.gcount(), static_cast<std::streamsize>(got.size() * 4)) << fx << ": wrong logits file size";
      const float* want = reinterpret_cast<const float*>(logits_t->data);
      double num = 0, den = 0, max_abs = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        double d = got[i] - want[i];
        num += d * d;
        den += static_cast<double>(want[i]) * want[i];
        max_abs = std::max(max_abs, std::fabs(d));
      }
      double rel = std::sqrt(num / den);
      std::printf("%s %s rel L2 %.3g max abs %.3g\n", fx.c_str(), pre.c_str(), rel, max_abs);
      EXPECT_LT(rel, 1e-3) << fx << " " << pre;
      EXPECT_LT(max_abs, 1e-3) << fx << " " << pre;
    }
  }
}

TEST(CliContract, GreedyIdsMatchGolden) {
  for (const auto& fx : kFixtures) {
    std::ifstream in(fixture(fx) + "/golden.json");
    auto j = nlohmann::json::parse(in);
    for (const auto& p : j["prompts"]) {
      std::vector<int> ids = p["input_ids"].get<std::vector<int>>();
      std::vector<int> want = p["greedy_tokens"].get<std::vector<int>>();
      RunResult r = run("generate --model " + fixture(fx) + " --ids " + join(ids) + " --max-tokens " +
                        std::to_string(want.size()) + " --temperature 0 --print-ids");
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      EXPECT_NE(r.out.find(join(want) + "\n"), std::string::npos) << fx << " " << p["name"] << ": " << r.out;
    }
  }
}

void rewrite(const fs::path& dir, const std::function<bool(const TensorInfo&, SafetensorsWriter&)>& edit);

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<float> v;
  float x;
  while (f.read(reinterpret_cast<char*>(&x), 4)) v.push_back(x);
  return v;
}

// Every fixture folder under fixtures/text (<fixture>/<variant>).
std::vector<std::string> all_fixtures() {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(std::string(QINFER_FIXTURES_DIR) + "/text"))
    if (f.is_directory())
      for (const auto& v : fs::directory_iterator(f.path()))
        if (fs::exists(v.path() / "golden.safetensors"))
          out.push_back(f.path().filename().string() + "/" + v.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// `logits --mtp-out`: the MTP head's rows against the fixtures' mtp_logits (all rows,
// where stored) and mtp_logits_last (every prompt); the main logits file is unchanged.
TEST(CliContract, MtpLogitsMatchGoldenOnEveryFixture) {
  for (const auto& fx : all_fixtures()) {
    SafetensorsFile golden(fixture(fx) + "/golden.safetensors");
    std::map<std::string, const TensorInfo*> g;
    for (const auto& t : golden.tensors()) g[t.name] = &t;
    for (int p = 0; g.count("p" + std::to_string(p) + ".input_ids"); ++p) {
      const std::string pre = "p" + std::to_string(p) + ".";
      const TensorInfo* ids_t = g.at(pre + "input_ids");
      std::vector<int> ids(reinterpret_cast<const int32_t*>(ids_t->data),
                           reinterpret_cast<const int32_t*>(ids_t->data) + ids_t->numel());
      const std::string out = temp_path("l.f32"), mout = temp_path("m.f32");
      RunResult r = run("logits --model " + fixture(fx) + " --ids " + join(ids) + " --out " + out + " --mtp-out " + mout);
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      const std::vector<float> main = read_f32(out), mtp = read_f32(mout);
      const TensorInfo* lt = g.at(pre + "logits");
      ASSERT_EQ(main.size(), static_cast<size_t>(lt->numel())) << fx;
      ASSERT_EQ(mtp.size(), main.size()) << fx;
      const size_t V = main.size() / ids.size();
      auto max_diff = [](const float* a, const float* b, size_t n) {
        double m = 0;
        for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
        return m;
      };
      const TensorInfo* last = g.at(pre + "mtp_logits_last");
      const double dl = max_diff(mtp.data() + (ids.size() - 1) * V, reinterpret_cast<const float*>(last->data), V);
      EXPECT_LT(dl, 1e-3) << fx << " " << pre << " last MTP row";
      if (g.count(pre + "mtp_logits")) {
        const double d = max_diff(mtp.data(), reinterpret_cast<const float*>(g.at(pre + "mtp_logits")->data), mtp.size());
        std::printf("%s %s MTP logits max abs %.3g (last row %.3g)\n", fx.c_str(), pre.c_str(), d, dl);
        EXPECT_LT(d, 1e-3) << fx << " " << pre << " MTP rows";
      }
    }
  }
}

// `generate --speculative-config` prints exactly the ids it prints without, for K = 1..4,
// and reports the acceptance figures.
TEST(CliContract, SpeculativeGreedyIdsMatchGolden) {
  for (const auto& fx : all_fixtures()) {
    std::ifstream in(fixture(fx) + "/golden.json");
    auto j = nlohmann::json::parse(in);
    for (int K = 1; K <= 4; ++K) {
      const auto& p = j["prompts"][K % j["prompts"].size()];
      std::vector<int> ids = p["input_ids"].get<std::vector<int>>();
      std::vector<int> want = p["greedy_tokens"].get<std::vector<int>>();
      RunResult r = run("generate --model " + fixture(fx) + " --ids " + join(ids) + " --max-tokens " +
                        std::to_string(want.size()) + " --temperature 0 --print-ids --speculative-config " +
                        "'{\"method\":\"mtp\",\"num_speculative_tokens\":" + std::to_string(K) + "}'");
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      EXPECT_NE(r.out.find(join(want) + "\n"), std::string::npos) << fx << " K=" << K << ": " << r.out;
      EXPECT_NE(r.out.find("acceptance rate"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("mean accepted length"), std::string::npos) << r.out;
    }
  }
}

TEST(CliContract, SpeculativeConfigErrors) {
  const std::string base = "generate --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1,2 --max-tokens 2 ";
  const std::pair<const char*, const char*> cases[] = {
      {"--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":9}'", "1..4"},
      {"--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":2}'", "ngram"},
      {"--speculative-config 'mtp'", "not valid JSON"}};
  for (const auto& [flag, needle] : cases) {
    RunResult r = run(base + flag);
    EXPECT_EQ(r.code, 1) << flag << ": " << r.out;
    EXPECT_NE(r.out.find("--speculative-config"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "checked only after loading: " << r.out;
  }
  // A checkpoint without mtp.* tensors: a clear error naming the folder, for generate and serve.
  fs::path dir = temp_path("no_mtp");
  fs::remove_all(dir);
  fs::copy(fixture("qwen35moe-tiny-s1/bf16"), dir, fs::copy_options::recursive);
  for (auto& e : fs::directory_iterator(dir)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  rewrite(dir, [](const TensorInfo& t, SafetensorsWriter&) { return t.name.rfind("mtp.", 0) == 0; });
  const std::string spec = " --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'";
  for (const std::string& cmd : {"generate --model " + dir.string() + " --ids 1,2 --max-tokens 2" + spec,
                                "serve " + dir.string() + " --port 0 --host 127.0.0.1" + spec}) {
    RunResult r = run(cmd);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("no mtp.* tensors"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(dir.string()), std::string::npos) << r.out;
  }
  RunResult r = run("logits --model " + dir.string() + " --ids 1,2 --out " + temp_path("a.f32") + " --mtp-out " +
                    temp_path("b.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("mtp"), std::string::npos) << r.out;
}

// Copies a fixture into a temp folder, applies `mutate`, and expects
// `qinfer logits` to fail with every one of `needles` in its message.
void expect_load_error(const std::string& tag, const std::function<void(const fs::path&)>& mutate,
                       const std::vector<std::string>& needles) {
  fs::path dir = temp_path("bad_" + tag);
  fs::remove_all(dir);
  fs::copy(fixture("qwen35moe-tiny-s1/gptq"), dir, fs::copy_options::recursive);
  for (auto& e : fs::directory_iterator(dir)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  mutate(dir);
  RunResult r = run("logits --model " + dir.string() + " --ids 1,2,3 --out " + temp_path("x.f32"));
  EXPECT_EQ(r.code, 1) << tag << ": " << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << tag << ": " << r.out;
  for (const auto& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << tag << ": '" << n << "' not in: " << r.out;
}

// Rewrites model.safetensors with one tensor changed by `edit` (name -> new dtype/shape/bytes or drop).
void rewrite(const fs::path& dir, const std::function<bool(const TensorInfo&, SafetensorsWriter&)>& edit) {
  SafetensorsWriter w;
  {
    SafetensorsFile f((dir / "model.safetensors").string());
    for (const auto& t : f.tensors())
      if (!edit(t, w)) w.add(t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  w.write((dir / "model.safetensors").string());
}

TEST(CliContract, BadCheckpointsGiveNamedErrors) {
  expect_load_error("truncated", [](const fs::path& d) {
    fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 100);
  }, {"model.safetensors", "truncated"});
  expect_load_error("offsets", [](const fs::path& d) {
    std::fstream f(d / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    uint64_t n;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string h(n, ' ');
    f.read(h.data(), static_cast<std::streamsize>(n));
    // Overwrite the end offset of lm_head.weight with as many 9s (same header length).
    size_t at = h.find("\"lm_head.weight\"");
    size_t off = h.find("data_offsets", at);
    size_t comma = h.find(',', off), close = h.find(']', comma);
    std::string nh = h;
    for (size_t i = comma + 1; i < close; ++i) nh[i] = '9';
    f.seekp(8);
    f.write(nh.data(), static_cast<std::streamsize>(n));
  }, {"model.safetensors", "lm_head.weight"});
  expect_load_error("missing", [](const fs::path& d) {
    rewrite(d, [](const TensorInfo& t, SafetensorsWriter&) { return t.name == "model.language_model.layers.1.linear_attn.out_proj.weight"; });
  }, {"model.language_model.layers.1.linear_attn.out_proj.weight"});
  expect_load_error("shape", [](const fs::path& d) {
    rewrite(d, [](const TensorInfo& t, SafetensorsWriter& w) {
      if (t.name != "model.language_model.layers.3.self_attn.k_proj.weight") return false;
      w.add(t.name, t.dtype, {t.shape[0] / 2, t.shape[1]}, std::vector<uint8_t>(t.data, t.data + t.nbytes / 2));
      return true;
    });
  }, {"model.safetensors", "model.language_model.layers.3.self_attn.k_proj.weight", "shape"});
  expect_load_error("dtype", [](const fs::path& d) {
    rewrite(d, [](const TensorInfo& t, SafetensorsWriter& w) {
      if (t.name != "model.language_model.norm.weight") return false;
      w.add(t.name, DType::I8, {t.shape[0] * 2}, std::vector<uint8_t>(t.data, t.data + t.nbytes));
      return true;
    });
  }, {"model.language_model.norm.weight"});
  expect_load_error("config", [](const fs::path& d) {
    std::ifstream in(d / "config.json");
    auto j = nlohmann::json::parse(in);
    in.close();
    j["text_config"].erase("num_experts");
    std::ofstream(d / "config.json") << j.dump(1);
  }, {"config.json", "num_experts"});
}

TEST(CliContract, BadRequestsAreRejected) {
  RunResult r = run("logits --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1,99999 --out " + temp_path("y.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("99999"), std::string::npos) << r.out;
  r = run("generate --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1,x --print-ids");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--ids"), std::string::npos) << r.out;
  r = run("logits --model /nonexistent --ids 1 --out " + temp_path("z.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent"), std::string::npos) << r.out;
  r = run("nosuchcommand");
  EXPECT_EQ(r.code, 2) << r.out;
}

// --help and --version succeed; a typo gets the nearest command or flag; every command,
// quantize included, is listed.
TEST(CliContract, HelpVersionAndSuggestions) {
  RunResult r = run("--help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("generate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("quantize"), std::string::npos) << r.out;
  r = run("--version");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("qinfer ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("built "), std::string::npos) << r.out;
  r = run("generte");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("did you mean 'generate'?"), std::string::npos) << r.out;
  r = run("nosuchcommand");
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;
  r = run("generate --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1 --max-token 2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("unknown option --max-token (did you mean --max-tokens?)"), std::string::npos) << r.out;
}

// Arguments are checked before the weights load: each of these fails at once, names the
// argument, and says what is wrong with it.
TEST(CliContract, ArgumentsCheckedBeforeLoad) {
  const std::string m = " --model " + fixture("qwen35moe-tiny-s1/bf16");
  RunResult r = run("generate" + m + " --ids 3,x --print-ids");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--ids"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("loaded "), std::string::npos) << "the model loaded before --ids was checked:\n" << r.out;
  r = run("logits" + m + " --ids 1,2 --out /nonexistent-dir/x.f32");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--out /nonexistent-dir/x.f32: folder /nonexistent-dir does not exist"), std::string::npos) << r.out;
  r = run("logits --model /nonexistent/model --ids 1 --out " + temp_path("w.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/model: folder does not exist"), std::string::npos) << r.out;
  r = run("generate --model /nonexistent/model --ids 1");
  EXPECT_NE(r.out.find("/nonexistent/model: folder does not exist"), std::string::npos) << r.out;
  if (::geteuid() != 0) {  // root may write anywhere
    r = run("logits" + m + " --ids 1 --out /proc/x.f32");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("--out /proc/x.f32"), std::string::npos) << r.out;
  }
}

// A bad sampling flag fails before the model loads, and the message names the flag.
TEST(CliContract, BadSamplingFlagsNameTheFlag) {
  const std::string base = "generate --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1,2 --max-tokens 2 ";
  const std::pair<const char*, const char*> cases[] = {
      {"--temperature -1", "--temperature"}, {"--top-p 2", "--top-p"}, {"--top-k -5", "--top-k"},
      {"--min-p 1.5", "--min-p"}, {"--repetition-penalty 0", "--repetition-penalty"},
      {"--presence-penalty 9", "--presence-penalty"}, {"--frequency-penalty -3", "--frequency-penalty"},
      {"--max-tokens 0", "--max-tokens"}, {"--threads -2", "--threads"}, {"--dense fp8", "--dense"}};
  for (const auto& [flag, name] : cases) {
    RunResult r = run(base + flag);
    EXPECT_EQ(r.code, 1) << flag << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("option ") + name + ":"), std::string::npos) << flag << ": " << r.out;
    EXPECT_EQ(r.out.find("loaded"), std::string::npos) << flag << ": checked only after loading: " << r.out;
  }
}

// `serve --max-model-len` above the model's context: refused before the weights load
// (vLLM refuses too), naming the flag and the override.
TEST(CliContract, ServeRefusesMaxModelLenAboveTheModel) {
  RunResult r = run("serve " + fixture("qwen35moe-tiny-s1/bf16") + " --port 0 --host 127.0.0.1 --max-model-len 99999999");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--max-model-len 99999999 is greater than this model's maximum context"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("QINFER_ALLOW_LONG_MAX_MODEL_LEN=1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "refused only after loading: " << r.out;
}

// `qinfer bench` on a tiny fixture prints every figure the issue asks for, with
// numbers in them (timings are not asserted: the machine is shared), and rejects
// bad flags by name.
TEST(CliContract, BenchPrintsEveryFigure) {
  RunResult r = run("bench --model " + fixture("qwen35moe-tiny-s1/gptq") +
                    " --prefill 16,32 --contexts 0,64 --rounds 2 --decode-tokens 3");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* want : {"bandwidth", "prefill         16 tokens:", "prefill         32 tokens:", "bytes/token",
                           "peak resident"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  for (const char* ctx : {"decode  ctx      0:", "decode  ctx     64:"}) {
    const auto at = r.out.find(ctx);
    ASSERT_NE(at, std::string::npos) << ctx << "\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find("(median of 6)"), std::string::npos) << line;   // rounds x decode-tokens steps
    const auto pct = line.find("-> ");
    ASSERT_NE(pct, std::string::npos) << line;
    const double ratio = std::stod(line.substr(pct + 3));
    EXPECT_TRUE(std::isfinite(ratio) && ratio > 0) << line;
    EXPECT_NE(line.find("% of the floor (median pair; quartiles "), std::string::npos) << line;
    EXPECT_NE(line.find("strict"), std::string::npos) << line;
    EXPECT_NE(line.find("triad alone"), std::string::npos) << line;
  }
  r = run("bench --model " + fixture("qwen35moe-tiny-s1/gptq") + " --rounds 0");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--rounds"), std::string::npos) << r.out;
}

TEST(CliContract, InspectAndSynthRoundTrip) {
  std::string dir = temp_path("synth");
  fs::remove_all(dir);
  RunResult r = run("synth --out " + dir + " --layers 4 --hidden 64 --experts 8 --experts-per-tok 2 --vocab 300 --moe-intermediate 64");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("inspect " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("4 (3 linear attention, 1 full attention)"), std::string::npos) << r.out;
  auto at = r.out.find("GPTQ modules");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(std::stoi(r.out.substr(at + 12)), 96) << r.out;  // 4 layers x 8 experts x 3
  r = run("generate --model " + dir + " --ids 1,2,3 --max-tokens 4 --temperature 0 --print-ids");
  ASSERT_EQ(r.code, 0) << r.out;
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {

// Perplexity over one window equals exp(mean NLL) computed from the golden logits.
TEST(CliContract, PerplexityMatchesGoldenLogits) {
  const std::string fx = fixture("qwen35moe-tiny-s1/bf16");
  SafetensorsFile golden(fx + "/golden.safetensors");
  const TensorInfo *ids_t = nullptr, *logits_t = nullptr;
  for (const auto& t : golden.tensors()) {
    if (t.name == "p2.input_ids") ids_t = &t;
    if (t.name == "p2.logits") logits_t = &t;
  }
  ASSERT_TRUE(ids_t && logits_t);
  const int32_t* ids = reinterpret_cast<const int32_t*>(ids_t->data);
  const float* lg = reinterpret_cast<const float*>(logits_t->data);
  const int64_t T = ids_t->numel(), V = logits_t->shape[1];
  double sum = 0;
  for (int64_t t = 1; t < T; ++t) {
    const float* row = lg + (t - 1) * V;
    double mx = row[0], s = 0;
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, static_cast<double>(row[i]));
    for (int64_t i = 0; i < V; ++i) s += std::exp(row[i] - mx);
    sum += std::log(s) + mx - row[ids[t]];
  }
  const double want = std::exp(sum / static_cast<double>(T - 1));
  std::vector<int> v(ids, ids + T);
  RunResult r = run("perplexity --model " + fx + " --ids " + join(v) + " --ctx 128 --stride 64");
  ASSERT_EQ(r.code, 0) << r.out;
  auto pos = r.out.find(" ppl ");
  ASSERT_NE(pos, std::string::npos) << r.out;
  double got = std::stod(r.out.substr(pos + 5));
  EXPECT_NEAR(got, want, 1e-3 * want) << r.out;
  // Several windows (stride 16) still score every token once.
  r = run("perplexity --model " + fx + " --ids " + join(v) + " --ctx 32 --stride 16");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("scored " + std::to_string(T - 1) + " "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {

// The text path on a demo model (real tokenizer and chat template, random weights).
class DemoModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = temp_path("demo");
    fs::remove_all(dir_);
    RunResult r = run("synth --demo --layers 2 --tokenizer " + std::string(QINFER_SOURCE_DIR) +
                      "/assets/tokenizer/qwen3.5 --out " + dir_);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  // `qinfer chat` on the demo model with `lines` as its standard input.
  static RunResult chat(const std::string& lines, const std::string& flags) {
    std::string input = temp_path("chat_input.txt");
    std::ofstream(input) << lines;
    return run("chat --model " + dir_ + " --temperature 0 " + flags + " < " + input);
  }
  static std::string dir_;
};
std::string DemoModel::dir_;

TEST_F(DemoModel, GeneratePromptIsDeterministicAndStops) {
  std::string cmd = "generate --model " + dir_ + " --prompt 'Hello there' --max-tokens 6 --temperature 0";
  RunResult a = run(cmd), b = run(cmd);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(a.out.find("generated"), b.out.find("generated"));
  EXPECT_NE(a.out.find("6 generated"), std::string::npos) << a.out;
  RunResult c = run("generate --model " + dir_ + " --prompt 'Hi' --chat --no-think --max-tokens 4 --seed 3 --temperature 1");
  ASSERT_EQ(c.code, 0) << c.out;
  RunResult ids = run("generate --model " + dir_ + " --prompt 'Hi' --max-tokens 3 --temperature 0 --print-ids");
  ASSERT_EQ(ids.code, 0) << ids.out;
  std::istringstream lines(ids.out);
  std::string line, id_line;
  while (std::getline(lines, line))
    if (!line.empty() && line.find_first_not_of("0123456789,") == std::string::npos) id_line = line;
  EXPECT_EQ(std::count(id_line.begin(), id_line.end(), ','), 2) << ids.out;
}

TEST_F(DemoModel, ChatResetAndExit) {
  RunResult r = chat("hi\n/reset\nhello\n/exit\n", "--max-tokens 5");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(conversation cleared)"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '>'), 4) << r.out;  // 3 prompts + the one /exit answers
}

// `qinfer chat` keeps one engine, so its prefix cache, for the whole conversation: the
// second turn resumes from the first prompt's state (one log line per request), and
// --no-enable-prefix-caching turns that off.
TEST_F(DemoModel, ChatTurnsShareThePrefixCache) {
  std::string system;
  for (int i = 0; i < 200; ++i) system += "word" + std::to_string(i) + " ";   // 500+ tokens
  const std::string flags = "--max-tokens 3 --system '" + system + "'";
  RunResult r = chat("hi\nand then?\n/exit\n", flags);
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t first = r.out.find("prefix cache: 0 of ");
  ASSERT_NE(first, std::string::npos) << r.out;
  const size_t second = r.out.find("prefix cache: ", first + 1);
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_NE(r.out.compare(second, 16, "prefix cache: 0 "), 0) << r.out;   // some tokens cached
  RunResult off = chat("hi\nand then?\n/exit\n", flags + " --no-enable-prefix-caching");
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_EQ(off.out.find("prefix cache:"), std::string::npos) << off.out;
}

// --hide-thinking still says the model is thinking (else a reply all in thinking shows nothing).
TEST_F(DemoModel, ChatHideThinkingShowsAMarker) {
  RunResult r = chat("hi\n/exit\n", "--max-tokens 3 --hide-thinking");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(thinking...)"), std::string::npos) << r.out;
  r = chat("hi\n/exit\n", "--max-tokens 3 --hide-thinking --no-think");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("(thinking...)"), std::string::npos) << r.out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// /help, an unknown /command (reported, not sent: no reply is generated), /system, multi-line input,
// /save then /load of the conversation as OpenAI-shaped JSON messages.
TEST_F(DemoModel, ChatCommandsSaveAndLoad) {
  std::string saved = temp_path("conv.json"), again = temp_path("conv2.json"), bad = temp_path("bad.json");
  fs::remove(saved);
  RunResult r = chat("/help\n/frobnicate now\n/system be brief\nfirst \\\nsecond\n\"\"\"\nblock one\nblock two\n\"\"\"\n"
                     "/save " + saved + "\n/exit\n", "--max-tokens 2 --no-think");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("/save FILE"), std::string::npos) << r.out;  // /help lists the commands
  EXPECT_NE(r.out.find("unknown command /frobnicate"), std::string::npos) << r.out;
  nlohmann::json conv = nlohmann::json::parse(slurp(saved));
  ASSERT_EQ(conv.size(), 5u) << conv.dump();  // system + 2 x (user, assistant): the unknown command sent nothing
  EXPECT_EQ(conv[0], (nlohmann::json{{"role", "system"}, {"content", "be brief"}}));
  EXPECT_EQ(conv[1], (nlohmann::json{{"role", "user"}, {"content", "first \nsecond"}}));
  EXPECT_EQ(conv[2]["role"], "assistant");
  EXPECT_EQ(conv[3], (nlohmann::json{{"role", "user"}, {"content", "block one\nblock two"}}));
  // /load brings the same conversation back; --system is replaced by the file's.
  r = chat("/load " + saved + "\n/save " + again + "\n/exit\n", "--system other --max-tokens 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loaded 5 messages"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(again)), conv);
  // A loaded conversation continues: one more turn adds a user and an assistant message.
  r = chat("/load " + saved + "\nmore\n/save " + again + "\n/exit\n", "--max-tokens 2 --no-think");
  EXPECT_EQ(nlohmann::json::parse(slurp(again)).size(), 7u) << r.out;
  // Bad files are reported with the file and the message index, and the chat goes on.
  std::ofstream(bad) << R"([{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}])";
  r = chat("/load " + bad + "\n/load " + temp_path("missing.json") + "\n/save\n/system\n/save " + again + "\n/exit\n",
           "--system keep --max-tokens 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(bad + ": messages[1].role: 'robot'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing.json: cannot open"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/save needs a file name"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(again)), nlohmann::json::array());  // /system with no text removed it
}

// On a real terminal (a pty through script(1)): libedit line editing (backspace), history
// recall with the up arrow, the history file under $XDG_STATE_HOME/qinfer, and bracketed
// paste (a multi-line paste is one message; a one-line paste is typed into the line).
TEST_F(DemoModel, ChatLineEditingOnATerminal) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) not installed";
  std::string state = temp_path("state"), saved = temp_path("tty.json"), keys = temp_path("keys.txt");
  fs::remove_all(state);
  fs::remove(saved);
  std::ofstream(keys) << "/system one\r\x1b[A two\r"
                       << "say: \x1b[200~hello\nworld\x1b[201~"
                       << "\x1b[200~/sa\x1b[201~ve " << saved << "X\x7f\r/exit\r";
  std::string cmd = "XDG_STATE_HOME=" + state + " timeout 120 script -qec '" + std::string(QINFER_BINARY) +
                    " chat --model " + dir_ + " --max-tokens 2 --no-think' /dev/null < " + keys + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  nlohmann::json conv = nlohmann::json::parse(slurp(saved));  // the X was erased by the backspace
  ASSERT_EQ(conv.size(), 3u) << conv.dump();
  EXPECT_EQ(conv[0]["content"], "one two");  // the up arrow brought back "/system one"
  EXPECT_EQ(conv[1], (nlohmann::json{{"role", "user"}, {"content", "say: hello\nworld"}}));
  std::string hist = slurp(state + "/qinfer/chat_history");
  EXPECT_NE(hist.find("/system\\040one\\040two"), std::string::npos) << hist;
}

// /image: a bad file is reported (naming it) and the chat goes on; an image for this
// text-only demo model fails that turn with a message naming the missing tower.
TEST_F(DemoModel, ChatImageCommand) {
  const std::string img = std::string(QINFER_FIXTURES_DIR) + "/multimodal/mm-s1/images/img_a_40x56.png";
  RunResult r = chat("/image /nonexistent/cat.png\n/image " + img + "\nwhat is it?\n/reset\nhi\n/exit\n",
                     "--max-tokens 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/cat.png"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(image attached to the next message"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no vision tower"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '>'), 6) << r.out;
}

TEST_F(DemoModel, PerplexityOnText) {
  std::string text = temp_path("ppl.txt");
  std::ofstream(text) << "The quick brown fox jumps over the lazy dog. It was a sunny day in the park.\n";
  RunResult r = run("perplexity --model " + dir_ + " --file " + text + " --ctx 8 --stride 4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" ppl "), std::string::npos) << r.out;
}

// --- images (tests/fixtures/multimodal): the contract of issue 11 ---------------------
std::string mm_fixture(const std::string& name) { return std::string(QINFER_FIXTURES_DIR) + "/multimodal/" + name; }

// `--image DIR/f1 --image DIR/f2` for a golden prompt's image files.
std::string image_flags(const std::string& dir, const nlohmann::json& p) {
  std::string s;
  for (const auto& f : p["image_files"]) s += " --image " + dir + "/" + f.get<std::string>();
  return s;
}

TEST(CliContract, ImageLogitsAndGreedyMatchGolden) {
  for (const std::string fx : {"mm-s1", "mm-s1-small"}) {
    const std::string dir = mm_fixture(fx);
    std::ifstream in(dir + "/golden.json");
    auto j = nlohmann::json::parse(in);
    SafetensorsFile golden(dir + "/golden.safetensors");
    std::map<std::string, const TensorInfo*> g;
    for (const auto& t : golden.tensors()) g[t.name] = &t;
    int with_images = 0;
    for (size_t pi = 0; pi < j["prompts"].size(); ++pi) {
      const auto& p = j["prompts"][pi];
      const std::string pre = "p" + std::to_string(pi) + ".";
      std::vector<int> ids = p["input_ids"].get<std::vector<int>>();
      with_images += !p["image_files"].empty();
      // logits: [expanded length, vocab]
      std::string out = temp_path("mm_logits.f32");
      RunResult r = run("logits --model " + dir + " --ids " + join(ids) + image_flags(dir, p) + " --out " + out);
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      const TensorInfo* want_t = g.at(pre + "logits");
      std::vector<float> got(static_cast<size_t>(want_t->numel()));
      std::ifstream f(out, std::ios::binary);
      f.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 4));
      ASSERT_EQ(f.gcount(), static_cast<std::streamsize>(got.size() * 4)) << fx << " " << pre << ": wrong file size";
      f.peek();
      EXPECT_TRUE(f.eof()) << fx << " " << pre << ": file longer than [expanded length, vocab]";
      const float* want = reinterpret_cast<const float*>(want_t->data);
      double max_abs = 0;
      for (size_t i = 0; i < got.size(); ++i) max_abs = std::max(max_abs, std::fabs(double(got[i]) - want[i]));
      // Image rows move ~10x more with tiny tower differences (multimodal/FORMAT.md).
      EXPECT_LT(max_abs, 5e-3) << fx << " " << pre;
      // greedy ids
      std::vector<int> greedy = p["greedy_tokens"].get<std::vector<int>>();
      r = run("generate --model " + dir + " --ids " + join(ids) + image_flags(dir, p) + " --max-tokens " +
              std::to_string(greedy.size()) + " --temperature 0 --print-ids");
      ASSERT_EQ(r.code, 0) << fx << " " << r.out;
      EXPECT_NE(r.out.find(join(greedy) + "\n"), std::string::npos) << fx << " " << pre << ": " << r.out;
    }
    EXPECT_GE(with_images, 2) << fx;
  }
  RunResult r = run("inspect " + mm_fixture("mm-s1"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("vision       3 blocks, hidden 64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.3M parameters"), std::string::npos) << r.out;
}

TEST(CliContract, ImageErrorsNameTheFileOrFlag) {
  const std::string dir = mm_fixture("mm-s1-small");
  std::ifstream in(dir + "/golden.json");
  auto j = nlohmann::json::parse(in);
  const nlohmann::json* one = nullptr;
  for (const auto& p : j["prompts"])
    if (p["image_files"].size() == 1) one = &p;
  ASSERT_NE(one, nullptr);
  const std::string ids = join((*one)["input_ids"].get<std::vector<int>>());
  // A missing file.
  RunResult r = run("logits --model " + dir + " --ids " + ids + " --image /nonexistent/cat.png --out " +
                    temp_path("e.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/cat.png"), std::string::npos) << r.out;
  // Not an image.
  std::string junk = temp_path("junk.png");
  std::ofstream(junk) << "this is not an image";
  r = run("generate --model " + dir + " --ids " + ids + " --image " + junk + " --max-tokens 2 --print-ids");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(junk), std::string::npos) << r.out;
  // One image too many for the placeholders in --ids.
  r = run("logits --model " + dir + " --ids " + ids + image_flags(dir, *one) + image_flags(dir, *one) +
          " --out " + temp_path("e2.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--ids"), std::string::npos) << r.out;
  // A text-only checkpoint.
  r = run("logits --model " + fixture("qwen35moe-tiny-s1/bf16") + " --ids 1,2" + image_flags(dir, *one) +
          " --out " + temp_path("e3.f32"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--image"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace qinfer
