// qinfer quantize: a BF16 Qwen3.5/3.6-MoE checkpoint (fused 3-D experts) to the
// GPTQ int4 layout GPTQModel writes (per-expert qweight/qzeros/scales/g_idx,
// everything else copied unchanged), by GPTQModel's algorithm (quant/gptq.h):
// layer by layer, the inputs of each layer produced by the already quantized
// layers before it; per layer the subsets {gate_proj, up_proj of every expert}
// then {down_proj of every expert} (true_sequential), each expert's Hessian from
// the tokens the router sends it; experts with fewer tokens than the failsafe
// threshold are rounded to nearest (RTN) and counted.
// The output is written into a hidden temporary folder next to --out and renamed
// to --out only when complete; on any error the temporary folder is removed.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quant/calibration.h"
#include "quant/gptq.h"

namespace qinfer::quant {

struct QuantizeOptions {
  std::string model_dir, out_dir;
  QuantSpec spec;
  CalibrationOptions calibration;        // files, samples, seq_len (model_dir/vocab filled in)
  std::string failsafe = "0.5%";         // "P%" of all calibration tokens, a token count, or "off"
  int64_t shard_bytes = 2000LL << 20;
  size_t activation_budget = 4ULL << 30; // calibration hidden states kept in memory; the rest spills to disk
  size_t hessian_budget = 4ULL << 30;    // expert Hessians held at once (more experts: more forward passes)
  bool compare_rtn = false;              // also measure RTN's output error for every GPTQ module
  int layers = -1;                       // quantize only the first N layers' experts (tests); -1: all
  // Set (e.g. by a SIGINT handler) to stop: the run fails with "interrupted" at the
  // next module and removes its temporary output folder.
  const std::atomic<bool>* cancel = nullptr;
  // Called with (work done, total work) in estimated floating-point operations each
  // time the stderr progress bar advances: after every batch of a calibration pass
  // and after every module (optional; tests).
  std::function<void(double, double)> on_progress;
};

struct ModuleReport {
  int layer = 0;
  int expert = 0;
  std::string proj;                      // gate_proj / up_proj / down_proj
  int64_t tokens = 0;
  bool failsafe = false, no_inverse = false, skipped = false;
  double avg_loss = 0, damp = 0;
  double err = -1, err_rtn = -1;         // Σ ||x(W−Q)ᵀ||² over the calibration rows (compare_rtn)
};

// Wall seconds per phase (summed over layers), for the per-layer log line and docs/PERFORMANCE.md.
struct PhaseSeconds {
  double forward = 0;   // calibration passes through the layer, Hessians accumulated on the way
  double factor = 0;    // dead inputs, ordering, damped inverse-Hessian factor
  double gptq = 0;      // GPTQ column loops
  double rtn = 0;       // failsafe rounding
  double compare = 0;   // --compare-rtn output errors
  double replay = 0;    // the quantized layer's outputs: the next layer's inputs
  double write = 0;     // packing and writing shards
};

struct QuantizeReport {
  std::vector<ModuleReport> modules;
  int64_t quantized_modules = 0, failsafe_modules = 0, skipped_modules = 0;
  int64_t no_inverse_modules = 0;        // GPTQ modules whose Hessian never factored (plain rounding)
  int64_t samples = 0, calibration_tokens = 0;
  double failsafe_threshold = 0;         // in tokens
  int64_t bytes_written = 0;
  double seconds = 0;
  PhaseSeconds phases;
  size_t peak_activation_bytes = 0, spilled_bytes = 0;
};

// Failsafe threshold in tokens (GPTQModel utils/failsafe.py): "P%" of
// total_tokens, a plain number of tokens, "true" (only experts with 0 tokens);
// "off"/"false"/"0" disables it (returns a negative value).
double failsafe_threshold(const std::string& setting, int64_t total_tokens);

QuantizeReport quantize_checkpoint(const QuantizeOptions& opt);

}  // namespace qinfer::quant
