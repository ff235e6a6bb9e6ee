// Prefix caching across the turns of a chat, with the real Qwen3.5 tokenizer and chat
// template (assets/tokenizer/qwen3.5) on a tiny random-weight model of the real vocabulary
// (io's demo checkpoint, written to a temp folder).
//
// What a second turn shares with the first once the template re-renders the history:
// the first turn's prompt ends with the generation prompt `<|im_start|>assistant\n`
// plus `<think>\n` (thinking on) or `<think>\n\n</think>\n\n` (thinking off). In the
// second turn's prompt that assistant message comes before the last user message, so
// the template renders it as `<|im_start|>assistant\n` + the answer: the reasoning and
// the think tags are gone. The turns share the first prompt up to `assistant\n`, a few
// tokens short of its end; the reply (rendered without its reasoning) is never shared.
// The engine saves a state at the last block edge at least 8 tokens before a prompt's
// end (engine.cc prompt_edges), so the second turn resumes there even when the first
// prompt ends just past an edge.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "greedy_params.h"
#include "io/synthetic_checkpoint.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::engine {
namespace {

using testing::greedy;

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

class PrefixChat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("qinfer_prefix_chat_" + std::to_string(::getpid()))).string());
    SynthOptions o = demo_synth_options();
    o.layers = 4;
    o.tokenizer_dir = std::string(QINFER_SOURCE_DIR) + "/assets/tokenizer/qwen3.5";
    write_synthetic_checkpoint(*dir_, o);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* PrefixChat::dir_ = nullptr;

size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Turn 1, then turn 2 continuing it; with the first prompt's length padded to
// `len_mod` past a block edge. Returns {first prompt length, shared tokens, turn-2 cached}.
struct Turns {
  int64_t len1 = 0, shared = 0, cached2 = 0, cached3 = 0;
};

Turns two_turns(Engine& e, bool thinking, int len_mod) {
  const Tokenizer& tok = *e.tokenizer();
  const ChatTemplate& ct = *e.chat_template();
  const ojson kwargs = {{"enable_thinking", thinking}};
  std::string system = "You are a careful assistant. Here is the document to discuss:";
  for (int i = 0; i < 60; ++i) system += " The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ".";
  ojson msgs = ojson::array();
  msgs.push_back({{"role", "system"}, {"content", system}});
  msgs.push_back({{"role", "user"}, {"content", "Summarise the document."}});
  auto render = [&](const ojson& m) { return tok.encode(ct.apply(m, ojson(), true, kwargs), true); };
  std::vector<int> p1 = render(msgs);
  // Pad the system text a word at a time until the prompt ends len_mod tokens past an edge.
  while (static_cast<int>(p1.size() % 256) != len_mod) {
    msgs[0]["content"] = msgs[0]["content"].get<std::string>() + " x";
    p1 = render(msgs);
  }
  Turns t;
  t.len1 = static_cast<int64_t>(p1.size());
  e.generate(p1, greedy(4));
  ojson reply = {{"role", "assistant"}, {"content", "The fox keeps jumping."}};
  if (thinking) reply["reasoning_content"] = "The user wants a summary.";
  msgs.push_back(reply);
  msgs.push_back({{"role", "user"}, {"content", "And the dog?"}});
  const std::vector<int> p2 = render(msgs);
  t.shared = static_cast<int64_t>(common_prefix(p1, p2));
  t.cached2 = e.generate(p2, greedy(4)).cached_tokens;
  // Turn 3 shares turn 2's prompt likewise.
  msgs.push_back({{"role", "assistant"}, {"content", "It sleeps."}});
  msgs.push_back({{"role", "user"}, {"content", "Thanks."}});
  const std::vector<int> p3 = render(msgs);
  EXPECT_GT(common_prefix(p2, p3), p2.size() - 8);
  t.cached3 = e.generate(p3, greedy(2)).cached_tokens;
  EXPECT_EQ(t.cached3, static_cast<int64_t>(std::max<size_t>(p2.size() - 8, 0) / 256 * 256));
  return t;
}

// The largest edge the first turn saved a state at (engine.cc prompt_edges, and every
// 4 blocks) that lies inside the shared part.
int64_t want_cached(int64_t len1, int64_t shared) {
  int64_t best = 0;
  for (int64_t e : {len1 / 256 * 256, (len1 - 1) / 256 * 256, (len1 - 8) / 256 * 256})
    if (e <= shared) best = std::max(best, e);
  for (int64_t e = 1024; e <= len1 && e <= shared; e += 1024) best = std::max(best, e);
  return best;
}

TEST_F(PrefixChat, NextTurnSharesTheFirstPromptUpToTheAssistantTag) {
  EngineOptions o;
  o.prefix_cache_gb = 1;
  auto e = Engine::load(*dir_, o);
  ASSERT_TRUE(e->tokenizer() && e->chat_template());
  for (bool thinking : {true, false}) {
    // Well past an edge: turn 2 resumes at the first prompt's last edge.
    Turns a = two_turns(*e, thinking, 100);
    const int64_t tail = a.len1 - a.shared;   // the generation prompt's think part, dropped
    std::printf("  thinking %d: turn 2 shares turn 1's prompt but its last %lld tokens\n", thinking,
                static_cast<long long>(tail));
    EXPECT_GE(tail, 1) << "thinking " << thinking;
    EXPECT_LE(tail, 4) << "thinking " << thinking;
    EXPECT_EQ(a.cached2, a.len1 / 256 * 256) << "thinking " << thinking;
    // One token past an edge: with a tail of 2 or more the edge lies in the dropped
    // part, and turn 2 resumes at the edge before it (kept 8 tokens before the end).
    Turns b = two_turns(*e, thinking, 1);
    EXPECT_EQ(b.cached2, want_cached(b.len1, b.shared)) << "thinking " << thinking;
    EXPECT_GT(b.cached2, 0);
    if (b.len1 - b.shared >= 2) {
      EXPECT_EQ(b.cached2, (b.len1 - 8) / 256 * 256);
    }
  }
}

}  // namespace
}  // namespace qinfer::engine
