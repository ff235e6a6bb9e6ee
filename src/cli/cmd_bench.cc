// qinfer bench — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_bench(int, char**) { fail("'qinfer bench' is not implemented yet"); }

}  // namespace qinfer::cli
