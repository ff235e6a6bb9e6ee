// qinfer synth — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_synth(int, char**) { fail("'qinfer synth' is not implemented yet"); }

}  // namespace qinfer::cli
