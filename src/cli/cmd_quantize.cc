// qinfer quantize --model BF16_DIR --out DIR --calibration FILE[,FILE...] [options]
// GPTQ int4 quantization of the routed experts (src/quant/quantizer.h), in the
// layout of the mission checkpoint. Progress (with ETA) on stderr; a summary on stdout.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "quant/quantizer.h"
#include "util/args.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer::cli {

namespace {

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::atomic<bool> g_cancel{false};

// First Ctrl-C / SIGTERM: stop at the next module and clean up; a second one kills.
void on_signal(int sig) {
  g_cancel.store(true);
  std::signal(sig, SIG_DFL);
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  Args a(argc, argv,
         {{"model", true}, {"out", true}, {"bits", true}, {"group-size", true}, {"sym", false}, {"asym", false},
          {"desc-act", false}, {"act-group-aware", false}, {"no-act-group-aware", false},
          {"calibration", true, true}, {"samples", true}, {"seq-len", true}, {"damp", true},
          {"damp-auto-increment", true}, {"failsafe-rtn", true}, {"threads", true}, {"shard-mb", true},
          {"activation-mb", true}, {"hessian-mb", true}, {"compare-rtn", false}, {"layers", true},
          {"help", false}});
  if (a.has("help")) {
    std::fprintf(stderr,
                 "usage: qinfer quantize --model BF16_DIR --out DIR --calibration FILE[,FILE...] [--samples 128]\n"
                 "                       [--seq-len 2048] [--bits 4] [--group-size 32] [--sym|--asym] [--desc-act]\n"
                 "                       [--act-group-aware|--no-act-group-aware] [--damp 0.05]\n"
                 "                       [--damp-auto-increment 0.01] [--failsafe-rtn 0.5%%|TOKENS|off]\n"
                 "                       [--shard-mb 2000] [--activation-mb 4096] [--hessian-mb 4096]\n"
                 "                       [--compare-rtn] [--threads N]\n"
                 "GPTQ (GPTQModel's algorithm) of every routed expert's gate/up/down projection; everything\n"
                 "else is copied unchanged. Calibration files: *.jsonl (\"text\", \"messages\" or \"input_ids\"\n"
                 "per line) or plain text, mixed round-robin in the order given. Experts that saw fewer\n"
                 "tokens than --failsafe-rtn (percent of all calibration tokens, or a token count) are\n"
                 "rounded to nearest. --compare-rtn also prints each GPTQ module's output error next to\n"
                 "RTN's on the calibration data.\n");
    return 0;
  }
  if (a.has("sym") && a.has("asym")) fail("give at most one of --sym and --asym");
  if (a.has("act-group-aware") && a.has("no-act-group-aware"))
    fail("give at most one of --act-group-aware and --no-act-group-aware");
  quant::QuantizeOptions o;
  o.model_dir = a.get("model");
  o.out_dir = a.get("out");
  o.spec.bits = static_cast<int>(a.get_int("bits", 4));
  o.spec.group_size = static_cast<int>(a.get_int("group-size", 32));
  o.spec.sym = !a.has("asym");
  o.spec.desc_act = a.has("desc-act");
  o.spec.act_group_aware = !a.has("no-act-group-aware") && !o.spec.desc_act;
  o.spec.damp_percent = a.get_double("damp", 0.05);
  o.spec.damp_auto_increment = a.get_double("damp-auto-increment", 0.01);
  if (!(o.spec.damp_percent > 0 && o.spec.damp_percent < 1)) fail("--damp must be in (0, 1)");
  if (o.spec.damp_auto_increment < 0) fail("--damp-auto-increment must be >= 0");
  o.calibration.files = split_list(a.get_all("calibration"));
  if (o.calibration.files.empty()) fail("--calibration FILE[,FILE...] is required");
  o.calibration.samples = a.get_int("samples", 128);
  o.calibration.seq_len = a.get_int("seq-len", 2048);
  o.failsafe = a.get_or("failsafe-rtn", "0.5%");
  const int64_t shard_mb = a.get_int("shard-mb", 2000), act_mb = a.get_int("activation-mb", 4096),
                hess_mb = a.get_int("hessian-mb", 4096);
  if (shard_mb < 1 || act_mb < 0 || hess_mb < 1) fail("--shard-mb, --hessian-mb must be >= 1 and --activation-mb >= 0");
  o.shard_bytes = shard_mb << 20;
  o.activation_budget = static_cast<size_t>(act_mb) << 20;
  o.hessian_budget = static_cast<size_t>(hess_mb) << 20;
  o.compare_rtn = a.has("compare-rtn");
  o.layers = static_cast<int>(a.get_int("layers", -1));
  if (a.has("threads")) ThreadPool::set_global_threads(static_cast<int>(a.get_int("threads", 0)));
  // A file-size limit should give a write error naming the file, not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  o.cancel = &g_cancel;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  const quant::QuantizeReport r = quant::quantize_checkpoint(o);
  if (o.compare_rtn) {
    std::printf("layer expert module tokens method err_gptq err_rtn\n");
    for (const auto& m : r.modules)
      if (!m.skipped)
        std::printf("%d %d %s %lld %s %.6g %.6g\n", m.layer, m.expert, m.proj.c_str(), static_cast<long long>(m.tokens),
                    m.failsafe ? "rtn" : "gptq", m.err, m.err_rtn);
  }
  std::printf("quantized %lld modules (%lld failsafe RTN, %lld left BF16) from %lld calibration samples, %lld tokens; "
              "failsafe threshold %.1f tokens; wrote %lld bytes to %s in %.1f s\n",
              static_cast<long long>(r.quantized_modules), static_cast<long long>(r.failsafe_modules),
              static_cast<long long>(r.skipped_modules), static_cast<long long>(r.samples),
              static_cast<long long>(r.calibration_tokens), r.failsafe_threshold,
              static_cast<long long>(r.bytes_written), o.out_dir.c_str(), r.seconds);
  if (r.no_inverse_modules > 0)
    std::printf("%lld modules had no inverse Hessian and were rounded without error feedback (see the warnings)\n",
                static_cast<long long>(r.no_inverse_modules));
  return 0;
}

}  // namespace qinfer::cli
