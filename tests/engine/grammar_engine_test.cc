// Structured outputs through the engine with the fake model: every sampled token keeps the
// output inside the grammar, EOS only where it accepts, the request ends (finish "stop")
// as soon as the grammar is complete, and the constraint can start after a given token.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "fake_runner.h"
#include "grammar/compiler.h"
#include "grammar/grammar.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qinfer::engine {
namespace {

using testing::FakeRunner;
using testing::FakeStats;

// Fake vocabulary: id 0 is EOS (excluded), id k is the k-th character of kChars.
const std::string kChars = "?-abcdefghijklmnopqrstuvwxyz0123456789{}[]\":, .ABCDEFGHIJKLMNOPQRSTUV!";

std::shared_ptr<const grammar::TokenVocab> fake_vocab() {
  std::vector<std::string> t(testing::kFakeVocab);
  std::vector<bool> ex(t.size(), false);
  ex[0] = true;
  ex[testing::kFakePoison] = true;
  for (int i = 1; i < testing::kFakeVocab; ++i) t[size_t(i)] = std::string(1, kChars[size_t(i)]);
  return std::make_shared<const grammar::TokenVocab>(t, ex);
}

std::string text_of(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids)
    if (id != testing::kFakeEos) s += kChars[size_t(id)];
  return s;
}

std::shared_ptr<const grammar::Grammar> compile(grammar::SpecKind k, const std::string& text) {
  static grammar::Compiler c(fake_vocab());
  return c.compile({k, text, "test"});
}

TEST(EngineGrammar, OutputsMatchAndStopWhenComplete) {
  FakeStats st;
  EngineOptions o;
  Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, o);
  auto g = compile(grammar::SpecKind::kRegex, "[a-e]{2,4}-[0-9]{3}");
  for (int seed = 0; seed < 8; ++seed) {
    GenParams p;
    p.max_tokens = 40;
    p.seed = seed;
    p.grammar = g;
    auto r = e.generate({3, 4, 5}, p);
    const std::string out = text_of(r.tokens);
    EXPECT_TRUE(g->matches(out)) << out;
    EXPECT_EQ(r.reason, FinishReason::kStop) << out;
    EXPECT_EQ(r.stop_token, -1) << "complete grammar ends without an EOS token";
  }
}

TEST(EngineGrammar, EosOnlyWhereTheGrammarAccepts) {
  FakeStats st;
  EngineOptions o;
  Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, o);
  // "a+" never completes by itself: the output must end with EOS, after at least one 'a'.
  auto g = compile(grammar::SpecKind::kRegex, "a+");
  GenParams p;
  p.max_tokens = 30;
  p.temperature = 0;
  p.logit_bias[testing::kFakeEos] = 50;  // the model wants EOS at once; the grammar forbids it first
  p.grammar = g;
  auto r = e.generate({1, 2}, p);
  ASSERT_GE(r.tokens.size(), 2u);
  EXPECT_EQ(r.tokens.back(), testing::kFakeEos);
  EXPECT_EQ(text_of(r.tokens), "a");
  EXPECT_EQ(r.reason, FinishReason::kStop);
}

TEST(EngineGrammar, ConstraintStartsAfterTheStartToken) {
  FakeStats st;
  EngineOptions o;
  Engine e(std::make_unique<FakeRunner>(&st), nullptr, nullptr, o);
  auto g = compile(grammar::SpecKind::kChoice, R"(["yes", "no"])");
  const int start = 30;  // forced first by the bias, then masked by the grammar
  GenParams p;
  p.max_tokens = 30;
  p.seed = 1;
  p.logit_bias[start] = 100;
  p.grammar = g;
  p.grammar_start_after = start;
  auto r = e.generate({1, 2}, p);
  ASSERT_FALSE(r.tokens.empty());
  EXPECT_EQ(r.tokens[0], start);
  const std::string rest = text_of(std::vector<int>(r.tokens.begin() + 1, r.tokens.end()));
  EXPECT_TRUE(rest == "yes" || rest == "no") << rest;
  EXPECT_EQ(r.reason, FinishReason::kStop);
}

}  // namespace
}  // namespace qinfer::engine
