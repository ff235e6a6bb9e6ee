// qinfer bench --model DIR: prefill tokens/s (512 and 2048 tokens), decode
// tokens/s at several context lengths, the bytes one decode token must read, the
// machine's memory bandwidth (a triad and a read pass it runs itself), and
// decode speed as a percentage of the bandwidth floor. --image-size: the vision
// tower instead (bench_image.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <random>
#include <vector>

#include "cli/bench_image.h"
#include "cli/bench_prefix.h"
#include "cli/bench_speculative.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "engine/prefix_flags.h"
#include "model/expert_cache.h"
#include "model/model.h"
#include "model/profile.h"
#include "ops/bandwidth.h"
#include "ops/matmul.h"
#include "util/args.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace qinfer::cli {

namespace {

// Bytes one decode token reads from memory: every dense weight once, top-k of the
// routed experts per layer, the KV cache of the context, one embedding row.
struct DecodeBytes {
  double dense = 0, experts = 0, lm_head = 0;
  double state = 0;         // DeltaNet conv + recurrent states (fp32), each read and written once a step
  double kv_per_token = 0;  // per context token
  double active_params = 0; // weights one token multiplies by (prefill arithmetic: 2 FLOP each, lm_head excluded)
  double total(int64_t context) const {
    return dense + experts + lm_head + 2 * state + kv_per_token * static_cast<double>(context);
  }
};

DecodeBytes decode_bytes(const TextConfig& t, bool gptq, int group_size, double dense_elem_bytes) {
  DecodeBytes b;
  const double H = t.hidden_size;
  const double kd = 1.0 * t.linear_num_key_heads * t.linear_key_head_dim;
  const double vd = 1.0 * t.linear_num_value_heads * t.linear_value_head_dim;
  const double attn = (2.0 * t.num_attention_heads * t.head_dim + 2.0 * t.num_key_value_heads * t.head_dim) * H +
                      H * t.num_attention_heads * t.head_dim;
  const double gdn = (2 * kd + vd + vd + 2.0 * t.linear_num_value_heads) * H + H * vd;
  const double moe_dense = (t.num_experts + 3.0 * t.shared_expert_intermediate_size + 1) * H;
  const int nfull = t.num_full_layers(), nlin = t.num_hidden_layers - nfull;
  b.dense = (nfull * attn + nlin * gdn + t.num_hidden_layers * moe_dense) * dense_elem_bytes;
  const double expert_params = 3.0 * t.moe_intermediate_size * H;
  const double expert_bytes = gptq ? expert_params * (0.5 + 2.0 / group_size) : expert_params * 2.0;
  b.experts = t.num_hidden_layers * t.num_experts_per_tok * expert_bytes;
  b.lm_head = static_cast<double>(t.vocab_size) * H * dense_elem_bytes + H * 2;
  b.active_params = b.dense / dense_elem_bytes + t.num_hidden_layers * t.num_experts_per_tok * expert_params;
  b.kv_per_token = 2.0 * nfull * t.num_key_value_heads * t.head_dim * sizeof(float);
  return b;
}

// Puts `context` tokens of synthetic history into the caches without running
// them, so decode can be timed at long context without a long prefill.
void fake_context(SequenceState& s, int64_t context) {
  for (int l = 0; l < s.shape().num_full_layers; ++l) {
    KvCache& kv = s.kv(l);
    kv.reserve(context);
    std::vector<float> row(static_cast<size_t>(kv.width()));
    for (int64_t p = 0; p < context; ++p) {
      for (int64_t i = 0; i < kv.width(); ++i) row[i] = 0.01f * static_cast<float>((p * 7 + i) % 13 - 6);
      kv.put(p, row.data(), row.data());
    }
  }
  s.advance(context);
}

// A "VmHWM:"-style field of /proc/self/status in bytes (0 where unavailable).
double proc_status_bytes(const char* field, const char* file = "/proc/self/status") {
  std::ifstream f(file);
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(f, line))
    if (line.compare(0, key.size(), key) == 0) return std::stod(line.substr(key.size())) * 1024.0;
  return 0;
}

// Prints and clears the QINFER_PROFILE breakdown of what ran since the last call.
void print_profile(const char* what) {
  if (!model::profiling()) return;
  std::printf("profile      %s:\n%s", what, model::profile_report().c_str());
  model::profile_reset();
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  std::vector<OptionSpec> specs = {{"model", true}, {"threads", true}, {"dense", true}, {"prefill", true},
                                   {"rounds", true}, {"contexts", true}, {"decode-tokens", true},
                                   {"mmap-dense", false}, {"help", false}, {"prefix-cache", true},
                                   {"speculative", true}, {"draft-vocab", true}, {"draft-int8", false},
                                   {"draft-layer-int8", false},
                                   {"image-size", true}, {"images", true}};
  for (auto& o : engine::prefix_cache_option_specs()) specs.push_back(o);
  for (auto& o : memory_option_specs()) specs.push_back(o);
  Args a(argc, argv, specs);
  if (a.has("help")) {
    std::fprintf(stderr,
                 "usage: qinfer bench --model DIR [--threads N] [--dense auto|bf16|bf16c|int8] [--prefill 512,2048]\n"
                 "                    [--contexts 0,4096,32768] [--decode-tokens 8] [--rounds 5] [--mmap-dense]\n"
                 "Decode times --rounds x --decode-tokens steps per context, each right after a bandwidth probe.\n"
                 "--mmap-dense reads dense weights from the checkpoint mapping instead of a huge-page copy.\n"
                 "QINFER_PROFILE=1 adds a per-part time breakdown of each phase.\n"
                 "QINFER_KERNEL_OPTS=bf16_dot (opt-in, less exact) or bf16_<kernel> (widen, widen_t0, widen_nopf,\n"
                 "widen_tiled, widen256, split3, split, amx): see qinfer --help.\n"
                 "--prefix-cache N [--prefix-cache-gb GB]: instead, time to first token of a request sharing an\n"
                 "N-token prefix with the one before (prefix cache) against cold ones, and the cache's memory.\n"
                 "--speculative K [--draft-vocab N] [--draft-int8] [--draft-layer-int8] instead measures MTP speculative\n"
                 "decoding (k = 1..K): verify and draft costs against a decode step and oracle-acceptance tokens/s\n"
                 "(needs mtp.*); the draft options are --speculative-config's draft_vocab_size, draft_lm_head int8\n"
                 "and draft_layer int8.\n"
                 "--image-size S [--images K] instead times the vision tower alone (the text model is not loaded)\n"
                 "on K synthetic SxS images in one pass: preprocessing, per-stage times, GFLOP/s against the GEMM\n"
                 "rate of the same kernels on the tower's matrices (needs model.visual.*: qinfer synth --vision).\n%s",
                 memory_flags_help());
    return 0;
  }
  if (a.has("prefix-cache")) return bench_prefix_cache(a);
  if (a.has("image-size") || a.has("images")) return bench_image(a);
  LoadOptions lo = load_options_from_args(a);
  if (lo.threads > 0) ThreadPool::set_global_threads(lo.threads);  // before the bandwidth probe
  lo.resident_dense = !a.has("mmap-dense");
  const int speculative = static_cast<int>(a.get_int("speculative", 0));
  if (a.has("speculative") && (speculative < 1 || speculative > Model::kMaxDraftTokens))
    fail("--speculative must be 1..", Model::kMaxDraftTokens, ", got ", speculative);
  const int64_t draft_vocab = a.get_int("draft-vocab", 0);
  lo.load_mtp = speculative > 0;
  lo.draft_int8 = speculative > 0 && a.has("draft-int8");
  lo.draft_layer_int8 = speculative > 0 && a.has("draft-layer-int8");
  lo.draft_vocab = draft_vocab;
  std::vector<int> prefills = parse_int_list(a.get_or("prefill", "512,2048"), "--prefill");
  std::vector<int> contexts = parse_int_list(a.get_or("contexts", "0,4096,32768"), "--contexts");
  const int decode_tokens = static_cast<int>(a.get_int("decode-tokens", 8));
  if (decode_tokens <= 0) fail("--decode-tokens must be positive");
  const int rounds = static_cast<int>(a.get_int("rounds", 5));
  if (rounds <= 0) fail("--rounds must be positive");
  if (lo.max_model_len == 0) {   // the memory plan sizes one sequence's KV for the longest run
    for (int n : prefills) lo.max_model_len = std::max<int64_t>(lo.max_model_len, n);
    for (int c : contexts) lo.max_model_len = std::max<int64_t>(lo.max_model_len, c + decode_tokens * rounds + 1);
  }

  log_info("measuring memory bandwidth ...");
  // The probe's buffer stays resident for the whole run (the decode rounds
  // measure again in it); its size is subtracted from the peak resident figures.
  const ops::BandwidthProbe probe;
  const ops::Bandwidth bw = probe.measure();
  const double probe_bytes = static_cast<double>(probe.resident_bytes());
  auto model = Model::load(model_dir_from_args(a), lo);
  const TextConfig& t = model->config().text;
  const auto& q = model->config().quant;
  // Bytes per dense weight as loaded: int8 codes, the 12-bit BF16 form (ops/bf16c.h) or BF16.
  const double dense_elem = lo.dense_int8 ? 1.0 : model->dense_bf16c() ? 1.5 : 2.0;
  DecodeBytes db = decode_bytes(t, q.enabled, q.enabled ? q.group_size : 32, dense_elem);
  // A fresh sequence holds no KV rows yet: its memory is the DeltaNet conv and recurrent states.
  db.state = static_cast<double>(model->new_sequence()->memory_bytes());
  // The full model (kFullLayers layers, the checkpoint's layer pattern repeated):
  // decode is memory-bound, so each measured step projects to bytes40 / bytes at
  // the bandwidth it achieved.
  constexpr int kFullLayers = 40;
  TextConfig t40 = t;
  t40.num_hidden_layers = kFullLayers;
  t40.layer_types.clear();
  for (int i = 0; i < kFullLayers; ++i) t40.layer_types.push_back(t.layer_types.at(i % t.layer_types.size()));
  DecodeBytes db40 = decode_bytes(t40, q.enabled, q.enabled ? q.group_size : 32, dense_elem);
  const int nlin = t.num_hidden_layers - t.num_full_layers(), nlin40 = kFullLayers - t40.num_full_layers();
  db40.state = nlin > 0 ? db.state * nlin40 / nlin : 0;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> tok(0, t.vocab_size - 1);
  std::vector<float> logits(static_cast<size_t>(t.vocab_size));

  std::printf("machine      %d threads, kernels %s\n", ThreadPool::global().size(), ops::kernel_path());
  std::printf("bandwidth    triad %.1f GB/s, read %.1f GB/s\n", bw.triad_gbs, bw.read_gbs);
  std::printf("model        %s: %d layers, weights %.2f GB resident (dense %s)\n", a.get("model").c_str(),
              t.num_hidden_layers, model->weight_bytes() / 1e9,
              lo.dense_int8 ? "int8" : model->dense_bf16c() ? "bf16c, 12-bit" : "bf16");
  const double hwm_load = proc_status_bytes("VmHWM") - probe_bytes;
  std::printf("memory       load: peak resident %.2f GB, steady %.2f GB (anon %.2f, of it in huge pages %.2f; "
              "file %.2f); weights %.2f GB; the probe's %.2f GB not counted\n",
              hwm_load / 1e9, (proc_status_bytes("VmRSS") - probe_bytes) / 1e9,
              (proc_status_bytes("RssAnon") - probe_bytes) / 1e9,
              std::max(0.0, proc_status_bytes("AnonHugePages", "/proc/self/smaps_rollup") - probe_bytes) / 1e9,
              proc_status_bytes("RssFile") / 1e9,
              model->weight_bytes() / 1e9, probe_bytes / 1e9);
  std::printf("bytes/token  %.3f GB at context 0 (dense %.3f, experts %.3f, lm_head %.3f, DeltaNet state %.3f read + "
              "written), +%.1f KB per context token\n",
              db.total(0) / 1e9, db.dense / 1e9, db.experts / 1e9, db.lm_head / 1e9, db.state / 1e9,
              db.kv_per_token / 1e3);

  if (speculative > 0) {
    bench_speculative(*model, speculative, static_cast<int>(a.get_int("rounds", 5)), draft_vocab,
                      a.has("draft-int8"), lo.draft_layer_int8);
    return 0;
  }
  for (int n : prefills)
    if (n <= 0 || n > model->max_context()) fail("--prefill ", n, " is outside 1..", model->max_context());
  auto prefill_seconds = [&](int n) {  // n random tokens into a new sequence
    std::vector<int> ids(static_cast<size_t>(n));
    for (int& id : ids) id = tok(rng);
    auto s = model->new_sequence();
    const double t0 = now_seconds();
    model->forward({{s.get(), ids.data(), n, logits.data(), false}});
    return now_seconds() - t0;
  };
  {
    // The first call touches the activation arena's pages (up to one pass of
    // Model::kMaxCallTokens tokens) and the workers' stacks: reported, not
    // counted in the steady-state figures below.
    const int n = static_cast<int>(std::min<int64_t>(Model::kMaxCallTokens, model->max_context()));
    const double dt = prefill_seconds(n);
    std::printf("prefill      %5d tokens: %8.1f tokens/s (%.2f s) first call (warm-up, page faults)\n", n, n / dt, dt);
    model::profile_reset();
  }
  for (int n : prefills) {
    const double dt = prefill_seconds(n);
    std::printf("prefill      %5d tokens: %8.1f tokens/s (%.2f s), %.1f GFLOP/s in weight products\n", n, n / dt, dt,
                2.0 * db.active_params * n / dt / 1e9);
    print_profile("prefill");
  }
  // Decode: every timed step runs right after a short bandwidth probe (read and
  // triad over 3 x 64 MiB, ~10 ms, the faster of two prefetch hints), and is
  // scored against it: floor_i = bytes / probe_i (the higher of triad and read),
  // ratio_i = floor_i / step_i. A shared machine's bandwidth moves from one
  // second to the next and both members of a pair see the same minute, so the
  // main figure is the median of the paired ratios (with their quartiles). The
  // line also gives, strictest, the best probe of the whole run against the
  // median step, and the median pair against the triad alone (the issue's
  // definition of the floor; the read pass usually measures more).
  int64_t max_ctx = 0;
  double best_gbs = std::max(bw.read_gbs, bw.triad_gbs);
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  for (int ctx : contexts) {
    max_ctx = std::max<int64_t>(max_ctx, ctx + decode_tokens * rounds + 1);
    model::profile_reset();
    if (ctx < 0 || ctx + decode_tokens * rounds + 1 > model->max_context())
      fail("--contexts ", ctx, " is outside the model's context");
    auto s = model->new_sequence();
    fake_context(*s, ctx);
    int id = tok(rng);
    model->forward({{s.get(), &id, 1, logits.data(), false}});  // warm-up step
    std::vector<double> steps, ratios, triad_ratios;
    double probe_lo = 1e30, probe_hi = 0;
    for (int i = 0; i < decode_tokens * rounds; ++i) {
      const ops::Bandwidth bw_now = probe.measure(1, int64_t{64} << 20);
      const double g = std::max(bw_now.read_gbs, bw_now.triad_gbs);
      probe_lo = std::min(probe_lo, g);
      probe_hi = std::max(probe_hi, g);
      best_gbs = std::max(best_gbs, g);
      id = tok(rng);
      const double t0 = now_seconds();
      model->forward({{s.get(), &id, 1, logits.data(), false}});
      const double dt = now_seconds() - t0;
      steps.push_back(dt);
      ratios.push_back(db.total(ctx) / (g * 1e9) / dt);
      triad_ratios.push_back(db.total(ctx) / (bw_now.triad_gbs * 1e9) / dt);
    }
    const double median = quantile(steps, 0.5);
    const double strict = db.total(ctx) / (best_gbs * 1e9) / median;
    std::printf("decode  ctx %6d: %7.2f tokens/s, %6.1f ms/token (median of %zu), floor at %.0f-%.0f GB/s -> "
                "%5.1f%% of the floor (median pair; quartiles %.1f-%.1f%%; strict %.1f%% at %.1f GB/s; "
                "triad alone %.1f%%)\n",
                ctx, 1.0 / median, median * 1e3, steps.size(), probe_lo, probe_hi, 100.0 * quantile(ratios, 0.5),
                100.0 * quantile(ratios, 0.25), 100.0 * quantile(ratios, 0.75), 100.0 * strict, best_gbs,
                100.0 * quantile(triad_ratios, 0.5));
    if (t.num_hidden_layers != kFullLayers)
      std::printf("decode  ctx %6d: full model (%d layers, %.3f GB/token) projected %.2f tokens/s at this run's "
                  "%.1f GB/s\n",
                  ctx, kFullLayers, db40.total(ctx) / 1e9, db.total(ctx) / db40.total(ctx) / median,
                  db.total(ctx) / median / 1e9);
    print_profile("decode (warm-up step included)");
    if (const model::ExpertCache* c = model->expert_cache())
      std::printf("experts      file-backed: %lld of %lld slots hot after %lld rebalances; the hot set served %.1f%% "
                  "of the routings since the last one\n",
                  static_cast<long long>(c->hot_count()), static_cast<long long>(c->slots()),
                  static_cast<long long>(c->rebalances()), 100.0 * c->hot_routed_share());
  }
  // Caches of the largest sequence (only one lives at a time): KV rows plus the
  // DeltaNet conv and recurrent states.
  const double caches = db.kv_per_token * static_cast<double>(max_ctx) + db.state;
  const double hwm = proc_status_bytes("VmHWM") - probe_bytes;
  const double base = model->weight_bytes() + caches;
  std::printf("memory       peak resident %.2f GB vs weights %.2f GB + caches %.2f GB = %.2f GB (%+.1f%%)\n", hwm / 1e9,
              model->weight_bytes() / 1e9, caches / 1e9, base / 1e9, 100.0 * (hwm - base) / base);
  std::printf("memory       now %.2f GB (anon %.2f, file %.2f); the probe's %.2f GB not counted\n",
              (proc_status_bytes("VmRSS") - probe_bytes) / 1e9, (proc_status_bytes("RssAnon") - probe_bytes) / 1e9,
              proc_status_bytes("RssFile") / 1e9, probe_bytes / 1e9);
  const ops::ProbeTime probes = ops::kernel_probe_time();
  std::printf("probes       %d kernel probes took %.2f s in all (once per process, on first use)\n", probes.count,
              probes.seconds);
  return 0;
}

}  // namespace qinfer::cli
