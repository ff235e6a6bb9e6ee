#include "cli/bench_prefix.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <unistd.h>

#include "cli/generation_flags.h"
#include "engine/engine.h"
#include "io/config.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {

double rss_bytes() {
  std::ifstream f("/proc/self/statm");
  double size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

int bench_prefix_cache(const Args& a) {
  const int64_t n = a.get_int("prefix-cache", 4096);
  const std::string dir = model_dir_from_args(a);
  const TextConfig tc = load_config(dir).text;
  if (n < 1 || n + 64 > tc.max_position_embeddings) fail("--prefix-cache ", n, " is outside the model's context");
  engine::EngineOptions eo = engine_options_from_args(a);
  eo.load.load_vision = false;
  auto eng = engine::Engine::load(dir, eo);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> tok(0, std::min(tc.vocab_size, 200000) - 1);
  auto random_ids = [&](int64_t k) {
    std::vector<int> v(static_cast<size_t>(k));
    for (int& t : v) t = tok(rng);
    return v;
  };
  engine::GenParams p;
  p.temperature = 0;
  p.max_tokens = 1;
  p.ignore_eos = true;
  const std::vector<int> prefix = random_ids(n);
  auto with_suffix = [&](const std::vector<int>& head) {
    std::vector<int> v = head;
    for (int t : random_ids(16)) v.push_back(t);
    return v;
  };
  auto timed = [&](const char* what, const std::vector<int>& ids) {
    log_info("bench: ", what, " (", ids.size(), " prompt tokens) ...");
    engine::GenResult r = eng->generate(ids, p);
    if (!r.error.empty()) fail("bench request failed: ", r.error);
    std::printf("%-34s %6zu prompt tokens, %6lld cached: time to first token %8.3f s\n", what, ids.size(),
                static_cast<long long>(r.cached_tokens), r.time_to_first_token);
    std::fflush(stdout);
    return r;
  };
  // Full-attention layers every full_attention_interval, the rest Gated DeltaNet.
  const int full = tc.num_full_layers();
  const int lin = tc.num_hidden_layers - full;
  const double B = 256, mib = 1 << 20;
  const double kv_dims = 2.0 * full * B * tc.num_key_value_heads * tc.head_dim * 4;
  const double conv_dim = 2.0 * tc.linear_num_key_heads * tc.linear_key_head_dim +
                          1.0 * tc.linear_num_value_heads * tc.linear_value_head_dim;
  const double state_dims = lin * ((tc.linear_conv_kernel_dim - 1) * conv_dim +
                                   1.0 * tc.linear_num_value_heads * tc.linear_key_head_dim * tc.linear_value_head_dim) * 4;
  std::printf("model        %s: %d layers (%d attention, %d Gated DeltaNet)\n", dir.c_str(), tc.num_hidden_layers, full,
              lin);
  const double rss0 = rss_bytes();
  const engine::GenResult cold1 = timed("cold (first request)", with_suffix(prefix));
  const engine::EngineStats s1 = eng->stats();
  const double rss1 = rss_bytes();
  const engine::GenResult warm = timed("shared prefix (second request)", with_suffix(prefix));
  const engine::GenResult cold2 = timed("cold (a new prefix)", with_suffix(random_ids(n)));
  std::printf("speed-up     %.1fx against the first cold request, %.1fx against the second\n",
              cold1.time_to_first_token / warm.time_to_first_token, cold2.time_to_first_token / warm.time_to_first_token);
  std::printf("cache        after the first request: %lld KV blocks + %lld state snapshots = %.2f MiB allocated; "
              "resident memory +%.2f MiB\n",
              static_cast<long long>(s1.prefix_cache_blocks), static_cast<long long>(s1.prefix_cache_states),
              s1.prefix_cache_bytes / mib, (rss1 - rss0) / mib);
  auto per = [](int64_t bytes, int64_t count) { return count > 0 ? bytes / static_cast<double>(count) : 0.0; };
  std::printf("per block    (256 tokens) attention KV: %.3f MiB from the dims, %.3f MiB allocated\n", kv_dims / mib,
              per(s1.prefix_cache_kv_bytes, s1.prefix_cache_blocks) / mib);
  std::printf("per snapshot DeltaNet conv + recurrent state: %.3f MiB from the dims, %.3f MiB allocated\n",
              state_dims / mib, per(s1.prefix_cache_state_bytes, s1.prefix_cache_states) / mib);
  if (full > 0 && lin > 0) {
    std::printf("real model   (40 layers: 10 attention, 30 DeltaNet): block %.2f MiB, snapshot %.2f MiB\n",
                kv_dims / full * 10 / mib, state_dims / lin * 30 / mib);
  }
  return 0;
}

}  // namespace qinfer::cli
