// qinfer quantize — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_quantize(int, char**) { fail("'qinfer quantize' is not implemented yet"); }

}  // namespace qinfer::cli
