// The prefix-cache flags of `qinfer serve`, `generate` and `chat`: vLLM's
// --enable-prefix-caching / --no-enable-prefix-caching (on by default, as vLLM V1) and
// qinfer's --prefix-cache-gb GB (the cache's memory budget; default a quarter of
// MemAvailable when the engine starts, never the planned sequences' KV/state).
#pragma once
#include <vector>

#include "engine/engine.h"
#include "util/args.h"

namespace qinfer::engine {

std::vector<OptionSpec> prefix_cache_option_specs();
// Sets o.enable_prefix_caching and o.prefix_cache_gb; Error naming the flag on a bad value.
void prefix_cache_options_from_args(const Args& a, EngineOptions& o);

}  // namespace qinfer::engine
