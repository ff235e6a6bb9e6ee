// The qinfer subcommands. Each lives in cmd_<name>.cc and receives the arguments
// after its name. They return the process exit code; a thrown qinfer::Error is
// reported by main() as "qinfer <cmd>: error: <message>" with exit code 1.
#pragma once

namespace qinfer::cli {

int cmd_inspect(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_bench(int argc, char** argv);

}  // namespace qinfer::cli
