// qinfer bench --speculative K: what MTP speculative decoding costs and gains on this
// machine, measured in one run with the phases interleaved round by round (a shared
// machine's speed drifts; ratios within a round are what is reported):
//  * one plain decode step (1 token), the reference;
//  * one verify pass of k+1 tokens (keep_states, then the rollback of a partial
//    acceptance) for k = 1..K, relative to the decode step;
//  * one MTP draft step with its lm_head, and the same step without the lm_head (the
//    MTP cache update only): their difference is the draft's lm_head cost; with
//    --draft-vocab N also a draft over the first N vocabulary rows only, with --draft-int8
//    over an int8 copy of the lm_head (with --draft-layer-int8 every draft step runs the
//    MTP layer re-encoded as int8 at load);
//  * tokens/s of full speculative cycles (verify k+1, roll back, MTP catch-up over the
//    accepted rows, k-1 further draft steps) against plain decode tokens/s, at oracle
//    acceptance a = 1.0, 0.7, 0.5: each draft position accepted with probability a,
//    the run ending at the first rejection. Every round times one cycle for each
//    outcome j = 0..k accepted drafts and weighs them by their probabilities
//    (a^j (1 - a), a^k for j = k): the expectation itself, E[j + 1] / E[cycle time],
//    not a sample of a few dozen random cycles (whose tokens/cycle alone moved the
//    ratio by +-0.1x). Every timed phase (verify pass, draft step, cycle) runs between
//    two plain decode steps and is divided by their mean (with one reference step per
//    round, the memory speed's drift within the round moved the ratios by +-0.1x).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/bench_speculative.h"
#include "model/profile.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
}  // namespace

void bench_speculative(Model& m, int K, int rounds, int64_t draft_vocab, bool draft_int8, bool layer_int8) {
  if (!m.has_mtp()) fail("bench --speculative: the checkpoint has no mtp.* tensors (synth it with --mtp)");
  if (K < 1 || K > Model::kMaxDraftTokens) fail("--speculative must be 1..", Model::kMaxDraftTokens, ", got ", K);
  const TextConfig& t = m.config().text;
  const int64_t V = t.vocab_size, H = t.hidden_size;
  if (draft_vocab < 0 || draft_vocab > V) fail("--draft-vocab must be 0..", V);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> tok(0, static_cast<int>(V) - 1);
  std::vector<float> logits((K + 1) * V), hidden((K + 1) * H), mh((K + 1) * H);
  const std::vector<double> rates = {1.0, 0.7, 0.5};

  // One sequence per phase, each with a short real history (prompt of 32 tokens).
  auto fresh = [&] {
    auto s = m.new_sequence();
    std::vector<int> ids(32);
    for (int& id : ids) id = tok(rng);
    std::vector<float> hs(32 * H), l(V);
    m.forward({{s.get(), ids.data(), 32, l.data(), false, hs.data()}});
    std::vector<int> next(ids.begin() + 1, ids.end());
    next.push_back(tok(rng));
    m.forward_mtp({{s.get(), next.data(), hs.data(), 32, nullptr, false}});
    return s;
  };
  auto plain_seq = fresh(), draft_seq = fresh();
  const bool cheap = draft_vocab > 0 || draft_int8;   // a cheaper draft head than the full lm_head
  auto draft_step = [&](SequenceState* s, const int* tok, const float* h, int64_t n) {
    Model::MtpStep ms{s, tok, h, n, logits.data(), false, mh.data()};
    ms.last_only = true;   // the last row's logits and MTP hidden (the others update the cache)
    ms.vocab_limit = draft_vocab;
    ms.int8_head = draft_int8;
    m.forward_mtp({ms});
  };
  if (draft_int8) {   // makes the int8 copy before anything is timed
    auto warm = fresh();
    const int t0 = 0;
    draft_step(warm.get(), &t0, hidden.data(), 1);
  }
  std::vector<std::unique_ptr<SequenceState>> verify_seq, cycle_seq;
  for (int k = 1; k <= K; ++k) verify_seq.push_back(fresh());
  for (int k = 1; k <= K; ++k) cycle_seq.push_back(fresh());

  // A verify forward of the k + 1 tokens `in` on s (all logits and hidden states, the
  // per-token DeltaNet states kept for rollback).
  auto verify_forward = [&](SequenceState* s, const std::vector<int>& in) {
    const int64_t n = static_cast<int64_t>(in.size());
    m.forward({{s, in.data(), n, logits.data(), true, hidden.data(), true}});
  };
  // One verify pass of k + 1 tokens on its own sequence, then the rollback of a
  // single kept token.
  auto verify_pass = [&](int k, const std::vector<int>& in) {
    verify_forward(verify_seq[k - 1].get(), in);
    verify_seq[k - 1]->rollback(1);
  };
  auto random_ids = [&](int n) {
    std::vector<int> ids(n);
    for (int& x : ids) x = tok(rng);
    return ids;
  };
  auto plain_step = [&] {
    const int id = tok(rng);
    const double t0 = now_seconds();
    m.forward({{plain_seq.get(), &id, 1, logits.data(), false}});
    return now_seconds() - t0;
  };
  // One full cycle with k drafts of which j are accepted: verify k + 1, keep j + 1,
  // MTP catch-up over the j + 1 kept rows, k - 1 further draft steps.
  auto cycle = [&](int k, int j) {
    SequenceState& s = *cycle_seq[k - 1];
    const std::vector<int> in = random_ids(k + 1);
    const double t0 = now_seconds();
    verify_forward(&s, in);
    s.rollback(j + 1);
    std::vector<int> next(in.begin() + 1, in.begin() + 1 + j);
    next.push_back(tok(rng));
    s.rewind_mtp(s.n_tokens() - (j + 1));
    draft_step(&s, next.data(), hidden.data(), j + 1);
    std::vector<float> last(mh.begin(), mh.begin() + H);
    for (int d = 1; d < k; ++d) {
      const int dt = tok(rng);
      draft_step(&s, &dt, last.data(), 1);
      std::copy(mh.begin(), mh.begin() + H, last.begin());
    }
    return now_seconds() - t0;
  };
  // P(j accepted of k) at per-position acceptance a.
  auto prob = [](double a, int k, int j) { return j < k ? std::pow(a, j) * (1.0 - a) : std::pow(a, k); };

  std::vector<double> plain, draft, draft_cache, draft_short;
  std::vector<std::vector<double>> verify(K);
  std::vector<std::vector<double>> speedup(K * rates.size());
  std::vector<double> tokens_per_cycle(K * rates.size());
  for (int r = 0; r < rounds; ++r) {
    log_info("bench --speculative: round ", r + 1, " of ", rounds);
    // Every timed phase sits between two plain steps and is divided by their mean:
    // this machine's memory speed drifts within a round by more than the effects
    // measured here.
    std::vector<double> steps{plain_step()};
    auto in_steps = [&](double secs) {
      steps.push_back(plain_step());
      return secs / (0.5 * (steps[steps.size() - 2] + steps.back()));
    };
    auto timed = [&](const auto& fn) {
      const double t0 = now_seconds();
      fn();
      return in_steps(now_seconds() - t0);
    };
    for (int k = 1; k <= K; ++k) {
      const std::vector<int> in = random_ids(k + 1);
      verify[k - 1].push_back(timed([&] { verify_pass(k, in); }));
    }
    // Draft steps: one MTP row with the lm_head, without it, and over a short vocabulary.
    const int id = tok(rng);
    draft.push_back(timed([&] { m.forward_mtp({{draft_seq.get(), &id, hidden.data(), 1, logits.data(), false, mh.data()}}); }));
    draft_cache.push_back(timed([&] { m.forward_mtp({{draft_seq.get(), &id, hidden.data(), 1, nullptr, false}}); }));
    if (cheap) draft_short.push_back(timed([&] { draft_step(draft_seq.get(), &id, hidden.data(), 1); }));
    // One cycle per outcome j for each k (shared by every acceptance rate), in steps.
    std::vector<std::vector<double>> cost(K);
    for (int k = 1; k <= K; ++k)
      for (int j = 0; j <= k; ++j) cost[k - 1].push_back(in_steps(cycle(k, j)));
    plain.push_back(median(steps));
    for (int k = 1; k <= K; ++k)
      for (size_t ai = 0; ai < rates.size(); ++ai) {
        double tokens = 0, time = 0;
        for (int j = 0; j <= k; ++j) {
          tokens += prob(rates[ai], k, j) * (j + 1);
          time += prob(rates[ai], k, j) * cost[k - 1][j];
        }
        const size_t c = (k - 1) * rates.size() + ai;
        tokens_per_cycle[c] = tokens;
        speedup[c].push_back(tokens / time);
      }
  }
  const double step = median(plain);
  std::printf("spec decode  plain decode step %.1f ms (%.2f tokens/s), median of %d rounds; figures below are\n"
              "             medians over the rounds of each phase over the mean of the plain steps before and after it\n",
              step * 1e3, 1.0 / step, rounds);
  for (int k = 1; k <= K; ++k)
    std::printf("spec verify  %d tokens (k=%d): %.2fx a decode step (rollback included)\n", k + 1, k,
                median(verify[k - 1]));
  if (layer_int8) std::printf("spec draft   the MTP layer is int8 (re-encoded at load) in every draft step below\n");
  std::printf("spec draft   one MTP step %.3fx a decode step; without its lm_head %.3fx: the lm_head is %.3fx "
              "(%.0f%% of the draft step)\n",
              median(draft), median(draft_cache), median(draft) - median(draft_cache),
              100.0 * (median(draft) - median(draft_cache)) / std::max(1e-12, median(draft)));
  const std::string how = cat(draft_vocab > 0 ? cat("the first ", draft_vocab, " vocabulary rows") : std::string("the whole vocabulary"),
                              draft_int8 ? ", int8 lm_head" : "", layer_int8 ? ", int8 MTP layer" : "");
  if (cheap) std::printf("spec draft   over %s: %.3fx a decode step\n", how.c_str(), median(draft_short));
  double best = 0;
  int best_k = 0;
  for (size_t ai = 0; ai < rates.size(); ++ai) {
    for (int k = 1; k <= K; ++k) {
      const size_t c = (k - 1) * rates.size() + ai;
      const double x = median(speedup[c]);
      if (rates[ai] == 0.7 && x > best) {
        best = x;
        best_k = k;
      }
      std::printf("spec cycle   acceptance %.1f k=%d: %.2f tokens/cycle (expected), %.2f tokens/s = %.2fx plain "
                  "decode%s\n",
                  rates[ai], k, tokens_per_cycle[c], x / step, x, cheap || layer_int8 ? cat(" (drafts over ", how, ")").c_str() : "");
    }
  }
  std::printf("spec best    at acceptance 0.7: k=%d, %.2fx plain decode\n", best_k, best);

  // QINFER_PROFILE=1: where a plain step and each verify pass spend their time
  // (4 of each, after the timed rounds so the timings above are not disturbed).
  if (!model::profiling()) return;
  const int reps = 4;
  model::profile_reset();
  for (int i = 0; i < reps; ++i) plain_step();
  std::printf("profile      %d plain decode steps:\n%s", reps, model::profile_report().c_str());
  for (int k = 1; k <= K; ++k) {
    model::profile_reset();
    for (int i = 0; i < reps; ++i) verify_pass(k, random_ids(k + 1));
    std::printf("profile      %d verify passes of %d tokens (rollback not timed by part):\n%s", reps, k + 1,
                model::profile_report().c_str());
  }
  model::profile_reset();
}

}  // namespace qinfer::cli
