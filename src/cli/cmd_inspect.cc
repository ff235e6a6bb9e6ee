// qinfer inspect — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_inspect(int, char**) { fail("'qinfer inspect' is not implemented yet"); }

}  // namespace qinfer::cli
