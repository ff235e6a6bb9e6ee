// Prefix caching (issue 14). The cache itself on fake saved blocks (keys, longest hit
// with a state, collisions, LRU eviction of unreferenced leaves, budget), and the
// engine on the tiny real-architecture fixtures: logits of a request that resumes from
// the cache against a cold run of the same request, at the same positions.
//  * Bitwise: one request at a time, where the cold run's prefill is cut at the same
//    block edges (the cache-on engine cuts its prefill there), the resumed request does
//    exactly the cold run's work after the restored prefix, so every logit must be equal
//    bit for bit: any stale, shifted or missing KV row or DeltaNet state shows.
//  * Tolerance: against an engine with the cache off (other chunking), batched, and
//    from a state saved during decode: fp32 summation order differs, so rel-L2 1e-4 as
//    the model's consistency tests, and the same greedy tokens.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "greedy_params.h"
#include "jinja/chat_template.h"
#include "recording_runner.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "vision/image_decode.h"
#include "vision/preprocess.h"

namespace qinfer::engine {
namespace {

using testing::greedy;

using testing::RecordingRunner;

// ---- the cache on fake blocks ----

SavedBlock fake_block(size_t bytes) { return {std::make_shared<int>(0), bytes}; }
SavedState fake_state(size_t bytes, int64_t pos) { return {std::make_shared<int>(0), bytes, pos, nullptr}; }

struct Chain {
  std::vector<int> tokens;
  std::vector<BlockKey> keys;
  std::vector<uint64_t> extras;
  Chain(std::vector<int> t, int64_t B, std::vector<ImageKey> im = {}) : tokens(std::move(t)) {
    extend_block_keys(tokens.data(), static_cast<int64_t>(tokens.size()), B, im, keys, extras);
  }
};

std::vector<int> seq_tokens(int seed, int n) {
  std::vector<int> v;
  uint32_t x = 2463534242u + seed * 7919u;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v.push_back(1 + static_cast<int>(x % 499));   // below the fixtures' special ids (500+)
  }
  return v;
}

TEST(PrefixCache, KeysNameTheWholePrefixAndTheImages) {
  const int64_t B = 4;
  std::vector<int> a = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b = a;
  b[1] = 99;   // differs in block 0 only
  Chain ca(a, B), cb(b, B);
  ASSERT_EQ(ca.keys.size(), 2u);   // full blocks only
  EXPECT_NE(ca.keys[0], cb.keys[0]);
  EXPECT_NE(ca.keys[1], cb.keys[1]);   // same tokens in block 1, different prefix
  // An image in block 1: same tokens, other pixels -> other key from block 1 on.
  std::vector<float> px1(12, 0.5f), px2 = px1;
  px2[7] = 0.25f;
  Chain i1(a, B, {{5, 7, image_content_hash(1, 2, 2, px1)}}), i2(a, B, {{5, 7, image_content_hash(1, 2, 2, px2)}});
  EXPECT_EQ(i1.keys[0], i2.keys[0]);
  EXPECT_NE(i1.keys[1], i2.keys[1]);
  EXPECT_NE(image_content_hash(1, 2, 2, px1), image_content_hash(1, 4, 1, px1));   // the grid counts
}

TEST(PrefixCache, LongestPrefixWithAStateAndExactMatchOnly) {
  const int64_t B = 4;
  PrefixCache c(1 << 20, B);
  Chain ch(seq_tokens(1, 16), B);
  for (int64_t b = 0; b < 4; ++b) ASSERT_TRUE(c.insert_block(ch.keys, ch.extras, ch.tokens.data(), b, fake_block(10)));
  EXPECT_EQ(c.lookup(ch.keys, ch.extras, ch.tokens.data(), 4).blocks, 0);   // KV without a state: no hit
  ASSERT_TRUE(c.insert_state(ch.keys[1], fake_state(100, 8)));
  ASSERT_TRUE(c.insert_state(ch.keys[3], fake_state(100, 16)));
  auto h = c.lookup(ch.keys, ch.extras, ch.tokens.data(), 4);
  EXPECT_EQ(h.blocks, 4);
  EXPECT_EQ(h.kv.size(), 4u);
  EXPECT_EQ(h.state.position, 16);
  EXPECT_EQ(c.lookup(ch.keys, ch.extras, ch.tokens.data(), 3).blocks, 2);   // max_blocks caps it
  // Another prompt sharing 3 blocks: resumes at the state of block 1.
  std::vector<int> t2 = ch.tokens;
  t2[13] = 7;
  Chain c2(t2, B);
  EXPECT_EQ(c.lookup(c2.keys, c2.extras, c2.tokens.data(), 4).blocks, 2);
  // The same keys with other tokens (a forged collision) never hit.
  std::vector<int> t3 = ch.tokens;
  t3[2] = 8;
  EXPECT_EQ(c.lookup(ch.keys, ch.extras, t3.data(), 4).blocks, 0);
  EXPECT_FALSE(c.insert_block(ch.keys, ch.extras, t3.data(), 0, fake_block(10)));
  // A block whose parent is missing is refused (the chain would not be exact).
  Chain c4(seq_tokens(4, 8), B);
  EXPECT_FALSE(c.insert_block(c4.keys, c4.extras, c4.tokens.data(), 1, fake_block(10)));
}

TEST(PrefixCache, EvictsLeastRecentlyUsedUnreferencedLeaves) {
  const int64_t B = 4;
  // Room for 5 blocks of 10 bytes and 2 states of 20.
  PrefixCache c(90, B);
  Chain x(seq_tokens(10, 8), B), y(seq_tokens(11, 8), B), z(seq_tokens(12, 8), B);
  for (Chain* ch : {&x, &y}) {
    for (int64_t b = 0; b < 2; ++b) ASSERT_TRUE(c.insert_block(ch->keys, ch->extras, ch->tokens.data(), b, fake_block(10)));
    ASSERT_TRUE(c.insert_state(ch->keys[1], fake_state(20, 8)));
  }
  EXPECT_EQ(c.stats().bytes, 80u);
  // x used again: y is now the least recently used.
  EXPECT_EQ(c.lookup(x.keys, x.extras, x.tokens.data(), 2).blocks, 2);
  ASSERT_TRUE(c.insert_block(z.keys, z.extras, z.tokens.data(), 0, fake_block(10)));
  ASSERT_TRUE(c.insert_block(z.keys, z.extras, z.tokens.data(), 1, fake_block(10)));   // evicts y's leaf
  EXPECT_EQ(c.lookup(y.keys, y.extras, y.tokens.data(), 2).blocks, 0);
  EXPECT_EQ(c.lookup(x.keys, x.extras, x.tokens.data(), 2).blocks, 2);
  EXPECT_LE(c.stats().bytes, 90u);
  EXPECT_GE(c.stats().evicted_blocks, 1);
  // Blocks a running sequence reads are not evicted: with x held, z's state cannot get
  // room; the insert is refused and nothing is dropped for it.
  auto held = c.lookup(x.keys, x.extras, x.tokens.data(), 2);
  const auto before = c.stats();
  EXPECT_FALSE(c.insert_state(z.keys[1], fake_state(80, 8)));
  EXPECT_EQ(c.stats().refused, before.refused + 1);
  EXPECT_EQ(c.lookup(x.keys, x.extras, x.tokens.data(), 2).blocks, 2);
  // Budget 0: nothing is kept.
  PrefixCache none(0, B);
  EXPECT_FALSE(none.insert_block(x.keys, x.extras, x.tokens.data(), 0, fake_block(10)));
}

// ---- the engine on the fixtures ----

std::string text_dir() { return std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16"; }

struct Rig {
  RecordingRunner* rec = nullptr;
  std::unique_ptr<Engine> engine;
  int next_id = 0;
};

Rig make_rig(const std::string& dir, bool cache, int snapshot_blocks = 4, int max_num_seqs = 8) {
  Rig r;
  auto rec = std::make_unique<RecordingRunner>(load_model_runner(dir, {}));
  r.rec = rec.get();
  EngineOptions o;
  o.max_num_seqs = max_num_seqs;
  o.enable_prefix_caching = cache;
  o.prefix_cache_gb = 1;
  o.prefix_snapshot_blocks = snapshot_blocks;
  r.engine = std::make_unique<Engine>(std::move(rec), nullptr, nullptr, o);
  return r;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<int> head(const std::vector<int>& a, size_t n) { return {a.begin(), a.begin() + n}; }

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Compares the logits rows of the positions both runs sampled from (>= from).
void expect_same_rows(const RecordingRunner::Rows& got, const RecordingRunner::Rows& want, int64_t from,
                      bool bitwise, const std::string& what) {
  int compared = 0;
  for (const auto& [pos, row] : want) {
    if (pos < from) continue;
    auto it = got.find(pos);
    ASSERT_NE(it, got.end()) << what << ": no logits at position " << pos;
    if (bitwise) {
      EXPECT_TRUE(it->second == row) << what << ": logits at position " << pos << " differ (rel-L2 "
                                     << rel_l2(it->second, row) << ")";
    } else {
      EXPECT_LT(rel_l2(it->second, row), 1e-4) << what << ": position " << pos;
    }
    ++compared;
  }
  EXPECT_GT(compared, 0) << what;
}

struct Done {
  GenResult r;
  RecordingRunner::Rows rows;
};

Done run(Rig& rig, const std::vector<int>& prompt, const GenParams& p) {
  Done d;
  d.r = rig.engine->generate(prompt, p);
  d.rows = rig.rec->rows(rig.next_id++);
  EXPECT_EQ(d.r.error, "");
  return d;
}

TEST(PrefixCacheEngine, ResentPromptResumesAndLogitsAreBitwiseEqual) {
  Rig rig = make_rig(text_dir(), true);
  Rig off = make_rig(text_dir(), false);
  const auto prompt = seq_tokens(1, 700);
  Done cold = run(rig, prompt, greedy(6));
  EXPECT_EQ(cold.r.cached_tokens, 0);
  Done warm = run(rig, prompt, greedy(6));
  EXPECT_EQ(warm.r.cached_tokens, 512);   // the last block edge before the prompt's last token
  EXPECT_EQ(warm.r.prompt_tokens, 700);
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, 700, true, "resent prompt");
  Done plain = run(off, prompt, greedy(6));
  EXPECT_EQ(plain.r.cached_tokens, 0);
  EXPECT_EQ(plain.r.tokens, cold.r.tokens);
  expect_same_rows(cold.rows, plain.rows, 700, false, "cache-on cold run vs cache off");
  const EngineStats st = rig.engine->stats();
  EXPECT_EQ(st.prefix_cache_queries, 1400);
  EXPECT_EQ(st.prefix_cache_hits, 512);
  EXPECT_GT(st.prefix_cache_states, 0);
  EXPECT_EQ(off.engine->stats().prefix_cache_queries, 0);
}

// Two prompts share `shared` tokens, then differ; the second resumes from the first's
// state at the largest snapshot edge inside the shared part. The snapshots of the first
// (len = shared + 90) are at multiples of 4 blocks and at its last edges, so:
struct SharedCase {
  int shared;
  int snapshot_blocks;
  int64_t want_cached;
};

class SharedPrefix : public ::testing::TestWithParam<SharedCase> {};

TEST_P(SharedPrefix, ResumedLogitsEqualAColdRunBitwise) {
  const SharedCase c = GetParam();
  const auto common = seq_tokens(2, c.shared);
  const auto a = concat(common, seq_tokens(3, 90));
  const auto b = concat(common, seq_tokens(4, 130));   // the resumed part crosses several 64-token chunks
  Rig rig = make_rig(text_dir(), true, c.snapshot_blocks);
  run(rig, a, greedy(3));
  Done warm = run(rig, b, greedy(5));
  EXPECT_EQ(warm.r.cached_tokens, c.want_cached);
  Rig fresh = make_rig(text_dir(), true, c.snapshot_blocks);
  Done cold = run(fresh, b, greedy(5));
  EXPECT_EQ(cold.r.cached_tokens, 0);
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, static_cast<int64_t>(b.size()), true,
                   "shared " + std::to_string(c.shared));
}

INSTANTIATE_TEST_SUITE_P(
    Edges, SharedPrefix,
    ::testing::Values(SharedCase{255, 4, 0},      // less than a block
                      SharedCase{256, 4, 256},    // on the edge (the first prompt's last edge)
                      SharedCase{300, 4, 256},    // off the edge
                      SharedCase{511, 4, 0},      // the first prompt's snapshot is at 512: past the shared part
                      SharedCase{511, 1, 256},    // ... with a snapshot every block
                      SharedCase{512, 4, 512}, SharedCase{513, 4, 512},
                      SharedCase{700, 1, 512}, SharedCase{1100, 4, 1024}),   // the every-4-blocks snapshot
    [](const auto& i) {
      return "shared" + std::to_string(i.param.shared) + "_every" + std::to_string(i.param.snapshot_blocks);
    });

TEST(PrefixCacheEngine, StateSavedAtTheEndOfGenerationResumesAContinuation) {
  // The prompt ends before the first edge; the decode crosses it, and the state there is
  // saved when the request ends. The continuation (prompt + output + more) resumes there.
  Rig rig = make_rig(text_dir(), true);
  Rig off = make_rig(text_dir(), false);
  const auto prompt = seq_tokens(5, 250);
  Done first = run(rig, prompt, greedy(20));
  ASSERT_EQ(first.r.tokens.size(), 20u);
  const auto next = concat(concat(prompt, first.r.tokens), seq_tokens(6, 80));
  Done warm = run(rig, next, greedy(5));
  EXPECT_EQ(warm.r.cached_tokens, 256);
  Done cold = run(off, next, greedy(5));
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, static_cast<int64_t>(next.size()), false, "continuation");
}

TEST(PrefixCacheEngine, BatchedSequencesShareCachedBlocks) {
  Rig rig = make_rig(text_dir(), true);
  Rig off = make_rig(text_dir(), false);
  const auto common = seq_tokens(7, 600);
  run(rig, common, greedy(2));   // snapshots at 512 (its last edges)
  const std::vector<std::vector<int>> prompts = {
      concat(common, seq_tokens(8, 40)), concat(head(common, 520), seq_tokens(9, 100)),
      concat(head(common, 300), seq_tokens(10, 70)), concat(common, seq_tokens(11, 300)), seq_tokens(12, 333)};
  const std::vector<int64_t> want_cached = {512, 512, 0, 512, 0};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : prompts) streams.push_back(rig.engine->submit(p, greedy(6)));
  std::vector<std::vector<int>> toks(prompts.size());
  std::vector<int64_t> cached(prompts.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    GenEvent ev;
    while (true) {
      if (!streams[i]->take(ev, 0.5)) continue;
      for (const auto& t : ev.tokens) toks[i].push_back(t.token);
      cached[i] = ev.cached_tokens;
      if (ev.finished) break;
    }
    EXPECT_EQ(ev.error, "");
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    Done cold = run(off, prompts[i], greedy(6));
    EXPECT_EQ(cached[i], want_cached[i]) << "request " << i;
    EXPECT_EQ(toks[i], cold.r.tokens) << "request " << i;
    expect_same_rows(rig.rec->rows(1 + static_cast<int>(i)), cold.rows, static_cast<int64_t>(prompts[i].size()),
                     false, "batched request " + std::to_string(i));
  }
}

// prompt_logprobs needs the logits of every prompt position: such a request is not
// resumed (as in vLLM), and gets all of them.
TEST(PrefixCacheEngine, PromptLogprobsRequestsAreNotResumed) {
  Rig rig = make_rig(text_dir(), true);
  const auto prompt = seq_tokens(15, 600);
  run(rig, prompt, greedy(2));
  GenParams p = greedy(2);
  p.prompt_logprobs = 0;
  auto stream = rig.engine->submit(prompt, p);
  GenEvent ev;
  size_t n_lp = 0;
  int64_t cached = -1;
  while (true) {
    if (!stream->take(ev, 0.5)) continue;
    n_lp += ev.prompt_logprobs.size();
    cached = ev.cached_tokens;
    if (ev.finished) break;
  }
  ++rig.next_id;
  EXPECT_EQ(ev.error, "");
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(n_lp, prompt.size() - 1);
  EXPECT_EQ(run(rig, prompt, greedy(2)).r.cached_tokens, 512);   // the cache is still there for others
}

TEST(PrefixCacheEngine, ZeroBudgetCachesNothing) {
  auto rec = std::make_unique<RecordingRunner>(load_model_runner(text_dir(), {}));
  EngineOptions o;
  o.prefix_cache_gb = 0;
  Engine e(std::move(rec), nullptr, nullptr, o);
  const auto prompt = seq_tokens(13, 600);
  auto a = e.generate(prompt, greedy(3));
  auto b = e.generate(prompt, greedy(3));
  EXPECT_EQ(b.cached_tokens, 0);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(e.stats().prefix_cache_bytes, 0);
}

// ---- images: part of the key by content ----

TEST(PrefixCacheEngine, ImagesAreKeyedByContent) {
  const std::string dir = std::string(QINFER_FIXTURES_DIR) + "/multimodal/mm-s1";
  const auto g = nlohmann::json::parse(std::ifstream(dir + "/golden.json"));
  const vision::ProcessorConfig pc = vision::load_processor_config(dir);
  const auto& p0 = g["prompts"][0];
  ASSERT_EQ(p0["image_files"].size(), 1u);
  const std::vector<int> ids = concat(p0["input_ids"].get<std::vector<int>>(), seq_tokens(14, 330));
  auto img = vision::preprocess_image(vision::load_image_file(dir + "/" + p0["image_files"][0].get<std::string>()), pc);
  auto other = img;
  other.pixel_values[3] += 0.5f;   // same grid, same tokens, other pixels
  GenParams pa = greedy(4), pb = greedy(4);
  pa.images = std::make_shared<std::vector<vision::ImagePatches>>(1, img);
  pb.images = std::make_shared<std::vector<vision::ImagePatches>>(1, other);

  Rig rig = make_rig(dir, true);
  Done cold = run(rig, ids, pa);
  EXPECT_EQ(rig.rec->images_encoded, 1);
  Done warm = run(rig, ids, pa);
  EXPECT_EQ(warm.r.cached_tokens, 256);
  EXPECT_EQ(rig.rec->images_encoded, 1);   // the image lies inside the cached prefix: no tower run
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, cold.r.prompt_tokens, true, "image prompt resent");
  Done changed = run(rig, ids, pb);
  EXPECT_EQ(changed.r.cached_tokens, 0);   // other pixels: another key
  EXPECT_EQ(rig.rec->images_encoded, 2);
}

// ---- speculative decoding (the fixture's MTP head drafting) and the prefix cache ----
// A speculating request resumes and saves too, on a chain of its own: its blocks carry
// the MTP layer's KV rows and its states the hidden row the MTP needs next. Resumed,
// it must do exactly what a cold run (cache on: the same prefill cuts) does: the same
// logits bit for bit, the same drafts, the same tokens.

Rig make_spec_rig(bool cache, int K = 2) {
  Rig r;
  RunnerLoadOptions lo;
  lo.load_mtp = true;
  auto rec = std::make_unique<RecordingRunner>(load_model_runner(text_dir(), lo));
  r.rec = rec.get();
  EngineOptions o;
  o.enable_prefix_caching = cache;
  o.prefix_cache_gb = 1;
  o.spec.method = "mtp";
  o.spec.num_speculative_tokens = K;
  r.engine = std::make_unique<Engine>(std::move(rec), nullptr, nullptr, o);
  return r;
}

TEST(PrefixCacheSpec, ResentPromptResumesExactly) {
  Rig rig = make_spec_rig(true);
  const auto prompt = seq_tokens(1, 700);
  Done cold = run(rig, prompt, greedy(30));
  EXPECT_EQ(cold.r.cached_tokens, 0);
  Done warm = run(rig, prompt, greedy(30));
  EXPECT_EQ(warm.r.cached_tokens, 512);
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, 700, true, "speculating, resent prompt");
  const std::vector<int> cold_drafts = rig.rec->drafts(0), warm_drafts = rig.rec->drafts(1);
  EXPECT_GT(cold_drafts.size(), 10u);
  EXPECT_EQ(warm_drafts, cold_drafts);
  // Greedy output is the plain model's, cache or not, and so are the logits at every
  // emitted position: bit for bit at the prompt's last row (the same prefill work after
  // the restored 512 tokens), within fp32 summation order after it (a verify run of k+1
  // rows against one-token decode steps: rel-L2 ~1e-6).
  Rig plain = make_rig(text_dir(), true);
  Done p = run(plain, prompt, greedy(30));
  EXPECT_EQ(p.r.tokens, cold.r.tokens);
  ASSERT_EQ(p.rows.count(700), 1u);
  EXPECT_TRUE(warm.rows[700] == p.rows[700]) << "prompt row: rel-L2 " << rel_l2(warm.rows[700], p.rows[700]);
  expect_same_rows(warm.rows, p.rows, 701, false, "speculating resumed vs plain cold");
  Rig nocache = make_spec_rig(false);
  EXPECT_EQ(run(nocache, prompt, greedy(30)).r.tokens, cold.r.tokens);
}

// The second prompt differs from token 512 on: its MTP row 511 (which reads token 512)
// must be recomputed, not taken from the first prompt's block.
TEST(PrefixCacheSpec, PromptDivergingAtTheEdgeRecomputesTheDraftRow) {
  const auto common = seq_tokens(2, 512);
  const auto a = concat(common, seq_tokens(3, 90));
  const auto b = concat(common, seq_tokens(4, 130));
  Rig rig = make_spec_rig(true, 3);
  run(rig, a, greedy(4));
  Done warm = run(rig, b, greedy(24));
  EXPECT_EQ(warm.r.cached_tokens, 512);
  Rig fresh = make_spec_rig(true, 3);
  Done cold = run(fresh, b, greedy(24));
  EXPECT_EQ(cold.r.cached_tokens, 0);
  EXPECT_EQ(warm.r.tokens, cold.r.tokens);
  expect_same_rows(warm.rows, cold.rows, static_cast<int64_t>(b.size()), true, "speculating, shared 512");
  EXPECT_EQ(rig.rec->drafts(1), fresh.rec->drafts(0));
  EXPECT_FALSE(fresh.rec->drafts(0).empty());
}

// A decode that crosses an edge saves the state there when it ends (the verify runs stop
// at the edge); the continuation resumes from it. Speculating and plain requests keep
// separate chains: a plain request does not resume from a speculating one's blocks.
TEST(PrefixCacheSpec, DecodeEdgeStateResumesAContinuation) {
  Rig rig = make_spec_rig(true, 4);
  const auto prompt = seq_tokens(5, 250);
  Done first = run(rig, prompt, greedy(24));
  ASSERT_EQ(first.r.tokens.size(), 24u);
  const auto next = concat(concat(prompt, first.r.tokens), seq_tokens(6, 80));
  Done warm = run(rig, next, greedy(8));
  EXPECT_EQ(warm.r.cached_tokens, 256);
  Rig off = make_rig(text_dir(), false);
  Done plain = run(off, next, greedy(8));
  EXPECT_EQ(warm.r.tokens, plain.r.tokens);
  EXPECT_EQ(first.r.tokens, run(off, prompt, greedy(24)).r.tokens);
  GenParams no_spec = greedy(8);
  no_spec.speculate = false;
  EXPECT_EQ(run(rig, next, no_spec).r.cached_tokens, 0);
}

}  // namespace
}  // namespace qinfer::engine
