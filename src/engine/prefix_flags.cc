#include "engine/prefix_flags.h"

#include <cmath>

#include "util/error.h"

namespace qinfer::engine {

std::vector<OptionSpec> prefix_cache_option_specs() {
  return {{"enable-prefix-caching", false}, {"no-enable-prefix-caching", false}, {"prefix-cache-gb", true}};
}

void prefix_cache_options_from_args(const Args& a, EngineOptions& o) {
  if (a.has("enable-prefix-caching") && a.has("no-enable-prefix-caching")) {
    fail("options --enable-prefix-caching and --no-enable-prefix-caching: give one of them");
  }
  o.enable_prefix_caching = !a.has("no-enable-prefix-caching");
  if (a.has("prefix-cache-gb")) {
    const double gb = a.get_double("prefix-cache-gb", -1);
    if (!std::isfinite(gb) || gb < 0 || gb > 1 << 20) {
      fail("option --prefix-cache-gb: must be a size in GiB, 0 or more, got ", a.get("prefix-cache-gb"));
    }
    o.prefix_cache_gb = gb;
  }
}

}  // namespace qinfer::engine
