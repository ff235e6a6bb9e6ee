// qinfer logits — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_logits(int, char**) { fail("'qinfer logits' is not implemented yet"); }

}  // namespace qinfer::cli
