#include "quant/quantizer.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/config.h"
#include "io/dtype.h"
#include "io/gptq.h"
#include "model/layers.h"
#include "model/linear.h"
#include "model/resident.h"
#include "model/weights.h"
#include "quant/activation_store.h"
#include "quant/expert_hessians.h"
#include "quant/layer_runner.h"
#include "quant/shard_writer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::quant {

namespace fs = std::filesystem;

double failsafe_threshold(const std::string& setting, int64_t total_tokens) {
  std::string s;
  for (char c : setting)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty() || s == "off" || s == "false" || s == "none") return -1.0;
  if (s == "true") return 1e-9;   // only experts that saw no token
  const bool pct = s.back() == '%';
  const std::string num = pct ? s.substr(0, s.size() - 1) : s;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(num, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != num.size() || num.empty() || v < 0)
    fail("--failsafe-rtn '", setting, "': expected a percentage of the calibration tokens (\"0.5%\"), a token count, "
         "\"true\" or \"off\"");
  if (v == 0) return -1.0;   // GPTQModel: a falsy threshold disables the failsafe
  return pct ? v / 100.0 * static_cast<double>(total_tokens) : v;
}

namespace {

struct PendingTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void emit_gptq(std::vector<PendingTensor>& out, const std::string& module, const GptqLinear& w, bool v2) {
  GptqPacked p = pack_gptq(w, v2);
  const int64_t K = w.cols, N = w.rows, G = p.num_groups;
  out.push_back({module + ".qweight", DType::I32, {K / 8, N}, as_bytes(p.qweight)});
  out.push_back({module + ".qzeros", DType::I32, {G, N / 8}, as_bytes(p.qzeros)});
  out.push_back({module + ".scales", DType::F16, {G, N}, as_bytes(p.scales_f16)});
  out.push_back({module + ".g_idx", DType::I32, {K}, as_bytes(p.g_idx)});
}

std::string regex_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (std::string(".^$|()[]{}*+?\\").find(c) != std::string::npos) r += '\\';
    r += c;
  }
  return r;
}

// Removes the temporary output folder unless the run completed.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    if (keep || path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const char* const kCopiedFiles[] = {
    "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json", "vocab.json",
    "merges.txt", "special_tokens_map.json", "added_tokens.json", "generation_config.json",
    "preprocessor_config.json", "video_preprocessor_config.json", "processor_config.json"};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();
  if (!out) fail(p.string(), ": write failed (disk full?)");
}

// What the input must be: the BF16 original with fused 3-D experts.
void check_original(const ModelConfig& cfg, const Checkpoint& ck, const std::string& prefix, const QuantSpec& s) {
  const TextConfig& tc = cfg.text;
  if (cfg.quant.enabled)
    fail(ck.dir(), "/config.json has a quantization_config: this is a quantized checkpoint, quantize needs the BF16 "
                   "original");
  for (const auto& [name, t] : ck.all())
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".qweight") == 0)
      fail(t->file, ": tensor ", name, " is GPTQ-packed: quantize needs the BF16 original");
  const int64_t H = tc.hidden_size, I = tc.moe_intermediate_size, E = tc.num_experts;
  for (int L = 0; L < tc.num_hidden_layers; ++L) {
    const std::string p = prefix + "layers." + std::to_string(L) + ".mlp.experts.";
    for (const auto& [leaf, shape] : {std::pair<std::string, std::vector<int64_t>>{"gate_up_proj", {E, 2 * I, H}},
                                      {"down_proj", {E, H, I}}}) {
      const TensorInfo* t = ck.find(p + leaf);
      if (!t) {
        if (ck.has(p + "0.gate_proj.weight"))
          fail(ck.dir(), ": ", p, "* are per-expert tensors: quantize reads the original layout with fused experts (",
               p + leaf, ")");
        fail(ck.dir(), ": tensor ", p + leaf, " is missing: quantize needs the BF16 original (fused experts)");
      }
      if (t->dtype != DType::BF16)
        fail(t->file, ": tensor ", t->name, " is ", dtype_name(t->dtype), ": quantize needs the BF16 original");
      t->expect_shape(shape);
    }
  }
  if (s.bits != 4) fail("--bits ", s.bits, ": only 4-bit GPTQ is supported");
  if (s.group_size <= 0 || H % s.group_size || I % s.group_size)
    fail("--group-size ", s.group_size, " does not divide the expert input sizes (hidden_size ", H,
         ", moe_intermediate_size ", I, ")");
  if (I % 8 || H % 8) fail("expert sizes must be multiples of 8 for int32 packing (hidden ", H, ", intermediate ", I, ")");
}

nlohmann::json quantization_config(const QuantizeOptions& opt, const QuantizeReport& rep,
                                   const std::vector<std::string>& skipped) {
  const QuantSpec& s = opt.spec;
  const std::string fmt = s.sym ? "gptq" : "gptq_v2";
  nlohmann::json dyn = nlohmann::json::object();
  for (const char* r : {"-:.*\\.linear_attn\\..*", "-:.*\\.mlp\\.gate$", "-:.*\\.mlp\\.shared_expert\\..*",
                        "-:.*\\.mlp\\.shared_expert_gate$", "-:.*\\.self_attn\\..*"})
    dyn[r] = nlohmann::json::object();
  for (const auto& m : skipped) dyn["-:" + regex_escape(m)] = nlohmann::json::object();
  nlohmann::json failsafe = nullptr;
  const double th = failsafe_threshold(opt.failsafe, rep.calibration_tokens);
  if (th >= 0) {
    failsafe = {{"strategy", "rtn"}, {"threshold", opt.failsafe}};
    // GPTQModel's default SmoothMAD only acts from group size 128 on; qinfer does not smooth.
    failsafe["smooth"] = s.group_size < 128
                             ? nlohmann::json{{"type", "mad"}, {"group_size_threshold", 128}, {"k", 2.75}}
                             : nlohmann::json(nullptr);
  }
  nlohmann::json meta = {
      {"quantizer", {"qinfer:quantize-1"}},
      {"uri", "https://github.com/modelcloud/gptqmodel"},
      {"damp_percent", s.damp_percent},
      {"damp_auto_increment", s.damp_auto_increment},
      {"static_groups", false},
      {"true_sequential", true},
      {"mse", 0.0},
      {"gptaq", nullptr},
      {"act_group_aware", s.act_group_aware && !s.desc_act},
      {"failsafe", failsafe},
      {"qinfer", {{"calibration_samples", rep.samples},
                  {"calibration_tokens", rep.calibration_tokens},
                  {"seq_len", opt.calibration.seq_len},
                  {"failsafe_modules", rep.failsafe_modules},
                  {"failsafe_threshold_tokens", th}}},
  };
  return {{"bits", s.bits},         {"checkpoint_format", fmt}, {"desc_act", s.desc_act}, {"dynamic", dyn},
          {"format", fmt},          {"group_size", s.group_size}, {"lm_head", false},     {"meta", meta},
          {"method", "gptq"},       {"pack_dtype", "int32"},    {"quant_method", "gptq"}, {"sym", s.sym}};
}

// One projection of one expert ([rows][cols] from element offset_elems of the fused
// tensor t) in fp32; a NaN or Inf weight is an error naming the tensor, expert and
// position (GPTQ would spread it over the whole row and write garbage codes).
std::vector<float> expert_rows(const TensorInfo& t, int64_t offset_elems, int64_t rows, int64_t cols, int64_t expert,
                               const char* proj) {
  const int64_t n = rows * cols;
  std::vector<float> w(static_cast<size_t>(n));
  model::to_f32(t.dtype, t.data + offset_elems * static_cast<int64_t>(dtype_size(t.dtype)), n, w.data());
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(w[i]))
      fail(t.file, ": tensor ", t.name, ": expert ", expert, " ", proj, " has a non-finite weight (", w[i], ") at row ",
           i / cols, ", column ", i % cols, ": quantize needs finite weights");
  return w;
}

// Adds the seconds from construction to destruction to *acc.
struct PhaseTimer {
  double* acc;
  double t0 = now_seconds();
  explicit PhaseTimer(double* a) : acc(a) {}
  ~PhaseTimer() { *acc += now_seconds() - t0; }
};

// Estimated floating-point operations of each piece of work, for the progress bar's
// ETA (one layer at real dimensions measured both at ~10 GFLOP/s on one machine,
// docs/PERFORMANCE.md): a token through the layer (the routed and shared experts,
// ~4 H² for attention or DeltaNet projections) plus, in a Hessian pass, the
// x xᵀ folds of the experts held in this pass; a module: the inverse-Hessian factor
// (K³, shared by gate_proj and up_proj) and the column loop's updates (2 N K²).
struct WorkModel {
  double token_pass = 0, gate_up_fold = 0, down_fold = 0;   // per token (folds for all E experts)
  double gate_up_module = 0, down_module = 0;
  explicit WorkModel(const TextConfig& tc) {
    const double H = tc.hidden_size, I = tc.moe_intermediate_size, Is = tc.shared_expert_intermediate_size,
                 k = tc.num_experts_per_tok;
    token_pass = 2.0 * (k * 3 * H * I + 3 * H * Is + 4 * H * H);
    gate_up_fold = 2.0 * k * H * H;
    down_fold = 2.0 * k * I * I;
    gate_up_module = H * H * H / 2 + 2 * I * H * H;
    down_module = I * I * I + 2 * H * I * I;
  }
};

std::vector<uint8_t> raw_rows(const TensorInfo& t, int64_t offset_elems, int64_t n) {
  const size_t es = dtype_size(t.dtype);
  std::vector<uint8_t> b(static_cast<size_t>(n) * es);
  t.read_bytes(static_cast<size_t>(offset_elems) * es, b.size(), b.data());
  return b;
}

}  // namespace

QuantizeReport quantize_checkpoint(const QuantizeOptions& opt) {
  const double t0 = now_seconds();
  QuantizeReport rep;
  const ModelConfig cfg = load_config(opt.model_dir);
  const TextConfig& tc = cfg.text;
  auto ck = Checkpoint::open(opt.model_dir);
  const std::string prefix = model::text_prefix(*ck);
  const QuantSpec& spec = opt.spec;
  check_original(cfg, *ck, prefix, spec);
  const int64_t H = tc.hidden_size, I = tc.moe_intermediate_size, E = tc.num_experts;
  if (opt.layers == 0 || opt.layers < -1) fail("--layers ", opt.layers, ": give at least 1 layer (or leave it out for all)");
  const int nq = opt.layers < 0 ? tc.num_hidden_layers : std::min(opt.layers, tc.num_hidden_layers);
  failsafe_threshold(opt.failsafe, 1);   // a malformed --failsafe-rtn fails before any work

  const fs::path out_dir = fs::path(opt.out_dir).lexically_normal();
  if (out_dir.empty() || out_dir.filename().empty()) fail("--out '", opt.out_dir, "' is not a folder name");
  if (fs::exists(out_dir)) fail(out_dir.string(), ": already exists (remove it or choose another --out)");

  CalibrationOptions co = opt.calibration;
  co.model_dir = opt.model_dir;
  co.vocab_size = tc.vocab_size;
  const CalibrationSet calib = load_calibration(co);
  rep.samples = static_cast<int64_t>(calib.samples.size());
  rep.calibration_tokens = calib.total_tokens;
  const double threshold = failsafe_threshold(opt.failsafe, calib.total_tokens);
  rep.failsafe_threshold = threshold;
  log_info("calibration: ", rep.samples, " samples, ", rep.calibration_tokens, " tokens; failsafe RTN ",
           threshold >= 0 ? cat("below ", threshold, " tokens per expert") : std::string("off"));

  TempDir tmp;
  const fs::path parent = out_dir.has_parent_path() ? out_dir.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  tmp.path = parent / ("." + out_dir.filename().string() + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(tmp.path, ec);
  if (!fs::create_directory(tmp.path, ec))
    fail(tmp.path.string(), ": cannot create the temporary output folder: ", ec.message());

  // Layer-0 inputs: the embeddings of every sample.
  auto in = std::make_unique<ActivationStore>(H, opt.activation_budget / 2, (tmp.path / "act-0.spill").string());
  auto out = std::make_unique<ActivationStore>(H, opt.activation_budget / 2, (tmp.path / "act-1.spill").string());
  {
    const TensorInfo& embed = ck->get(prefix + "embed_tokens.weight");
    std::vector<float> x;
    for (const auto& ids : calib.samples) {
      const int64_t n = static_cast<int64_t>(ids.size());
      x.resize(static_cast<size_t>(n * H));
      model::embed_rows(embed, ids.data(), n, H, x.data());
      in->begin_sample(n);
      in->append(x.data(), n);
    }
  }

  // Tensors of each text layer (copied unless replaced), and the rest.
  std::map<int, std::vector<const TensorInfo*>> layer_tensors;
  std::vector<const TensorInfo*> other;
  const std::string lp = prefix + "layers.";
  for (const auto& [name, t] : ck->all()) {
    if (name.compare(0, lp.size(), lp) == 0) {
      const size_t dot = name.find('.', lp.size());
      layer_tensors[std::stoi(name.substr(lp.size(), dot - lp.size()))].push_back(t);
    } else {
      other.push_back(t);
    }
  }

  const bool v2 = !spec.sym;
  ShardWriter writer(tmp.path.string(), opt.shard_bytes);
  LayerRunner runner(tc);
  std::vector<std::string> skipped;
  const size_t per_chunk = std::max<size_t>(1, opt.hessian_budget / ExpertHessians::bytes_per_expert(H));
  // Progress in estimated work (WorkModel), advanced by every calibration batch and
  // every module, so that the bar moves (and the ETA holds) whichever dominates.
  const WorkModel wm(tc);
  const int64_t chunks = (E + static_cast<int64_t>(per_chunk) - 1) / static_cast<int64_t>(per_chunk);
  const double T = static_cast<double>(calib.total_tokens);
  const double work_total =
      nq * (T * (2.0 * static_cast<double>(chunks) * wm.token_pass + wm.gate_up_fold + wm.down_fold) +
            static_cast<double>(E) * (2 * wm.gate_up_module + wm.down_module)) +
      std::max(0, nq - 1) * T * wm.token_pass;
  if (!(work_total > 0)) fail("quantize: nothing to do (", nq, " layers, ", calib.total_tokens, " calibration tokens)");
  constexpr int64_t kSteps = 1000;
  Progress progress("quantizing (per mille of the estimated work)", kSteps);
  double work_done = 0;
  auto advance = [&](double w) {
    work_done = std::min(work_total, work_done + w);
    progress.update(static_cast<int64_t>(static_cast<double>(kSteps) * work_done / work_total));
    if (opt.on_progress) opt.on_progress(work_done, work_total);
  };
  // Per batch of a pass: the layer itself plus the folds of the experts [e0, e1) held.
  auto pass_progress = [&](double fold_per_token, int64_t e0, int64_t e1) {
    const double per_row = wm.token_pass + fold_per_token * static_cast<double>(e1 - e0) / static_cast<double>(E);
    return [&advance, per_row](int64_t rows) { advance(per_row * static_cast<double>(rows)); };
  };
  auto check_cancel = [&] {
    if (opt.cancel && opt.cancel->load()) fail("interrupted: ", out_dir.string(), " was not written");
  };

  for (int L = 0; L < tc.num_hidden_layers; ++L) {
    const std::string lname = lp + std::to_string(L) + ".";
    const std::string ep = lname + "mlp.experts.";
    std::vector<PendingTensor> pending;
    if (L < nq) {
      model::LayerWeights l = model::load_text_layer(cfg, *ck, L);
      l.cache_index = 0;
      const TensorInfo& gu = ck->get(ep + "gate_up_proj");
      const TensorInfo& dn = ck->get(ep + "down_proj");
      std::vector<int64_t> counts(E, 0);
      std::vector<char> keep_bf16(E, 0);
      auto record = [&](int e, const char* proj, int64_t n, const Quantized& q, double err, double err_rtn) {
        ModuleReport m;
        m.layer = L;
        m.expert = e;
        m.proj = proj;
        m.tokens = n;
        m.failsafe = q.failsafe;
        m.no_inverse = q.no_inverse;
        m.avg_loss = q.avg_loss;
        m.damp = q.damp;
        m.err = err;
        m.err_rtn = err_rtn;
        rep.modules.push_back(m);
        ++rep.quantized_modules;
        if (q.failsafe) ++rep.failsafe_modules;
        if (q.no_inverse) {
          ++rep.no_inverse_modules;
          log_warn(ep, e, ".", proj, ": the damped Hessian of its ", n, " calibration rows never factored (NaN or Inf "
                   "activations?): rounded without GPTQ's error feedback");
        }
      };
      // Subset 1: gate_proj and up_proj of every expert (same inputs, one Hessian).
      for (int64_t e0 = 0; e0 < E; e0 += static_cast<int64_t>(per_chunk)) {
        const int64_t e1 = std::min<int64_t>(E, e0 + static_cast<int64_t>(per_chunk));
        ExpertHessians hs(ExpertHessians::Input::kGateUp, E, H, e0, e1);
        {
          check_cancel();
          PhaseTimer pt(&rep.phases.forward);
          runner.run(l, *in, nullptr, &hs, pass_progress(wm.gate_up_fold, e0, e1));
          hs.finish();
        }
        if (e0 == 0)
          for (int64_t e = 0; e < E; ++e) counts[e] = hs.rows(e);
        for (int64_t e = e0; e < e1; ++e) {
          check_cancel();
          const int64_t n = counts[e];
          const std::string m = ep + std::to_string(e) + ".";
          if (threshold < 0 && n == 0) {   // GPTQModel without failsafe leaves it unquantized
            keep_bf16[e] = 1;
            for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
              skipped.push_back(m + proj);
              ModuleReport r;
              r.layer = L;
              r.expert = static_cast<int>(e);
              r.proj = proj;
              r.skipped = true;
              rep.modules.push_back(r);
              ++rep.skipped_modules;
            }
            pending.push_back({m + "gate_proj.weight", DType::BF16, {I, H}, raw_rows(gu, e * 2 * I * H, I * H)});
            pending.push_back({m + "up_proj.weight", DType::BF16, {I, H}, raw_rows(gu, e * 2 * I * H + I * H, I * H)});
            pending.push_back({m + "down_proj.weight", DType::BF16, {H, I}, raw_rows(dn, e * H * I, H * I)});
            advance(2 * wm.gate_up_module + wm.down_module);
            continue;
          }
          const std::vector<float> Wg = expert_rows(gu, e * 2 * I * H, I, H, e, "gate_proj");
          const std::vector<float> Wu = expert_rows(gu, e * 2 * I * H + I * H, I, H, e, "up_proj");
          const bool rtn = threshold >= 0 && static_cast<double>(n) < threshold;
          Quantized qg, qu;
          double eg = -1, eu = -1, rg = -1, ru = -1;
          if (rtn) {
            PhaseTimer pt(&rep.phases.rtn);
            qg = quantize_rtn(Wg.data(), I, H, spec);
            qu = quantize_rtn(Wu.data(), I, H, spec);
          } else {
            PreparedHessian ph;
            {
              PhaseTimer pt(&rep.phases.factor);
              ph = prepare_hessian(hs.S(e), H, n, spec);
            }
            {
              PhaseTimer pt(&rep.phases.gptq);
              qg = quantize_gptq(Wg.data(), I, H, ph, spec);
              qu = quantize_gptq(Wu.data(), I, H, ph, spec);
            }
            if (opt.compare_rtn) {
              PhaseTimer pt(&rep.phases.compare);
              eg = output_error(Wg.data(), qg.w, hs.S(e));
              eu = output_error(Wu.data(), qu.w, hs.S(e));
              rg = output_error(Wg.data(), quantize_rtn(Wg.data(), I, H, spec).w, hs.S(e));
              ru = output_error(Wu.data(), quantize_rtn(Wu.data(), I, H, spec).w, hs.S(e));
            }
          }
          record(static_cast<int>(e), "gate_proj", n, qg, eg, rg);
          record(static_cast<int>(e), "up_proj", n, qu, eu, ru);
          emit_gptq(pending, m + "gate_proj", qg.w, v2);
          emit_gptq(pending, m + "up_proj", qu.w, v2);
          model::Expert& x = l.moe.experts[e];
          x.gate_up.gptq = model::pack_gptq(qg.w, &qu.w, m + "gate_proj/up_proj");
          advance(2 * wm.gate_up_module);
        }
      }
      // Subset 2: down_proj, its inputs computed with the quantized gate/up.
      for (int64_t e0 = 0; e0 < E; e0 += static_cast<int64_t>(per_chunk)) {
        const int64_t e1 = std::min<int64_t>(E, e0 + static_cast<int64_t>(per_chunk));
        ExpertHessians hs(ExpertHessians::Input::kDown, E, I, e0, e1);
        {
          check_cancel();
          PhaseTimer pt(&rep.phases.forward);
          runner.run(l, *in, nullptr, &hs, pass_progress(wm.down_fold, e0, e1));
          hs.finish();
        }
        for (int64_t e = e0; e < e1; ++e) {
          check_cancel();
          if (keep_bf16[e]) continue;
          const int64_t n = hs.rows(e);
          const std::string m = ep + std::to_string(e) + ".";
          const std::vector<float> Wd = expert_rows(dn, e * H * I, H, I, e, "down_proj");
          const bool rtn = threshold >= 0 && static_cast<double>(n) < threshold;
          Quantized qd;
          double ed = -1, rd = -1;
          if (rtn) {
            PhaseTimer pt(&rep.phases.rtn);
            qd = quantize_rtn(Wd.data(), H, I, spec);
          } else {
            PreparedHessian ph;
            {
              PhaseTimer pt(&rep.phases.factor);
              ph = prepare_hessian(hs.S(e), I, n, spec);
            }
            {
              PhaseTimer pt(&rep.phases.gptq);
              qd = quantize_gptq(Wd.data(), H, I, ph, spec);
            }
            if (opt.compare_rtn) {
              PhaseTimer pt(&rep.phases.compare);
              ed = output_error(Wd.data(), qd.w, hs.S(e));
              rd = output_error(Wd.data(), quantize_rtn(Wd.data(), H, I, spec).w, hs.S(e));
            }
          }
          record(static_cast<int>(e), "down_proj", n, qd, ed, rd);
          emit_gptq(pending, m + "down_proj", qd.w, v2);
          l.moe.experts[e].down.gptq = model::pack_gptq(qd.w, nullptr, m + "down_proj");
          advance(wm.down_module);
        }
      }
      // Replay with every expert quantized: the next layer's inputs.
      if (L + 1 < nq) {
        PhaseTimer pt(&rep.phases.replay);
        out->clear();
        runner.run(l, *in, out.get(), nullptr, pass_progress(0.0, 0, 0));
        rep.peak_activation_bytes = std::max(rep.peak_activation_bytes, in->memory_bytes() + out->memory_bytes());
        rep.spilled_bytes = std::max(rep.spilled_bytes, in->spilled_bytes() + out->spilled_bytes());
        std::swap(in, out);
      }
      model::drop_pages(gu.data, gu.nbytes);
      model::drop_pages(dn.data, dn.nbytes);
    }
    {
      PhaseTimer pt(&rep.phases.write);
      for (auto& p : pending) writer.add(p.name, p.dtype, std::move(p.shape), std::move(p.bytes));
      for (const TensorInfo* t : layer_tensors[L]) {
        if (L < nq && (t->name == ep + "gate_up_proj" || t->name == ep + "down_proj")) continue;
        writer.add_copy(*t);
      }
      writer.flush_if_full();
    }
    if (L < nq) {
      const PhaseSeconds& p = rep.phases;
      log_info("layer ", L, " done at ", now_seconds() - t0, " s; so far: calibration passes + Hessians ", p.forward,
               " s, inverse-Hessian factors ", p.factor, " s, GPTQ column loops ", p.gptq, " s, RTN ", p.rtn,
               " s, RTN comparison ", p.compare, " s, replay ", p.replay, " s, writing ", p.write, " s; ",
               rep.failsafe_modules, " of ", rep.quantized_modules, " modules failsafe RTN so far");
    }
  }
  progress.finish();
  in.reset();
  out.reset();
  for (const TensorInfo* t : other) writer.add_copy(*t);
  rep.bytes_written = writer.finish();

  // config.json with quantization_config, quantize_config.json, tokenizer files.
  nlohmann::json config = read_json_file((fs::path(opt.model_dir) / "config.json").string());
  rep.seconds = now_seconds() - t0;
  const nlohmann::json qc = quantization_config(opt, rep, skipped);
  config["quantization_config"] = qc;
  write_text(tmp.path / "config.json", config.dump(2) + "\n");
  write_text(tmp.path / "quantize_config.json", qc.dump(2) + "\n");
  for (const char* name : kCopiedFiles) {
    const fs::path src = fs::path(opt.model_dir) / name;
    if (!fs::is_regular_file(src)) continue;
    fs::copy_file(src, tmp.path / name, ec);
    if (ec) fail((tmp.path / name).string(), ": cannot copy ", src.string(), ": ", ec.message());
  }
  fs::rename(tmp.path, out_dir, ec);
  if (ec) fail(out_dir.string(), ": cannot move the finished output into place: ", ec.message());
  tmp.keep = true;
  rep.seconds = now_seconds() - t0;
  return rep;
}

}  // namespace qinfer::quant
