// qinfer: one binary, many subcommands. This file only dispatches.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "util/error.h"
#include "util/log.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"generate", qinfer::cli::cmd_generate, "generate text or ids from a prompt"},
    {"chat", qinfer::cli::cmd_chat, "interactive chat in the terminal"},
    {"serve", qinfer::cli::cmd_serve, "OpenAI-compatible HTTP server (vllm serve drop-in)"},
    {"logits", qinfer::cli::cmd_logits, "write the logits of one prefill call to a file"},
    {"inspect", qinfer::cli::cmd_inspect, "summarise a checkpoint folder"},
    {"synth", qinfer::cli::cmd_synth, "write a synthetic checkpoint with random weights"},
    {"quantize", qinfer::cli::cmd_quantize, "quantize a BF16 checkpoint to GPTQ int4"},
    {"perplexity", qinfer::cli::cmd_perplexity, "perplexity on a text file"},
    {"bench", qinfer::cli::cmd_bench, "prefill/decode speed and memory bandwidth"},
};

void usage() {
  std::fprintf(stderr, "usage: qinfer <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(stderr, "  %-11s %s\n", c.name, c.help);
  std::fprintf(stderr, "\nqinfer <command> --help shows the options of one command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.fn(argc - 2, argv + 2);
    } catch (const qinfer::Error& e) {
      std::fprintf(stderr, "qinfer %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "qinfer %s: error: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qinfer %s: internal error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "qinfer: unknown command '%s'\n", argv[1]);
  usage();
  return 2;
}
