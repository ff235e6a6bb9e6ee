// qinfer chat — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_chat(int, char**) { fail("'qinfer chat' is not implemented yet"); }

}  // namespace qinfer::cli
