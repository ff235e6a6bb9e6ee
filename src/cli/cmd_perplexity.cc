// qinfer perplexity — placeholder until its issue lands; it says so and fails.
#include "cli/commands.h"
#include "util/error.h"

namespace qinfer::cli {

int cmd_perplexity(int, char**) { fail("'qinfer perplexity' is not implemented yet"); }

}  // namespace qinfer::cli
