// config.json (and an optional quantize_config.json after a "\n---quantize_config---\n" line):
// parsed with the process's JSON limits and validated by parse_config, as load_config does.
#include "fuzz_util.h"
#include "io/config.h"
#include "util/error.h"
#include "util/json_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [config_text, quant_text] = qinfer::fuzz::split_at(qinfer::fuzz::as_text(data, size), "\n---quantize_config---\n");
  try {
    const nlohmann::json j = qinfer::parse_json(config_text, "config.json");
    nlohmann::json q;
    if (!quant_text.empty()) q = qinfer::parse_json(quant_text, "quantize_config.json");
    const qinfer::ModelConfig c = qinfer::parse_config(j, "config.json", quant_text.empty() ? nullptr : &q);
    (void)c.text.rotary_dim();
    (void)c.text.num_full_layers();
    for (const char* m : {"model.layers.0.mlp.experts.0.gate_proj", "model.layers.1.self_attn.q_proj", "lm_head"})
      (void)c.quant.match(m);
  } catch (const qinfer::Error&) {
  }
  return 0;
}
