// qinfer bench --model DIR --prefix-cache N: time to first token of a request that
// shares an N-token prefix with an earlier one (resumed from the prefix cache) against
// cold requests, and what the cache holds per KV block and per DeltaNet state snapshot.
#pragma once
#include "util/args.h"

namespace qinfer::cli {

int bench_prefix_cache(const Args& a);

}  // namespace qinfer::cli
