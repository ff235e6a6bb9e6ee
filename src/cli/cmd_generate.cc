// qinfer generate — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_generate(int, char**) { fail("'qinfer generate' is not implemented yet"); }

}  // namespace qinfer::cli
