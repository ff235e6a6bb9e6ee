// qinfer serve — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_serve(int, char**) { fail("'qinfer serve' is not implemented yet"); }

}  // namespace qinfer::cli
