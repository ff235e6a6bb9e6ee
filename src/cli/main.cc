// qinfer: one binary, many subcommands. This file only dispatches.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "util/error.h"
#include "util/log.h"
#include "util/suggest.h"

namespace {

constexpr const char* kVersion = "0.1.0";

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
    {"quantize", qinfer::cli::cmd_quantize, "quantize a BF16 checkpoint to GPTQ int4 (GPTQModel recipe)"},
    {"perplexity", qinfer::cli::cmd_perplexity, "perplexity on a text file"},
    {"bench", qinfer::cli::cmd_bench, "prefill/decode speed and memory bandwidth"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: qinfer <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.help);
  std::fprintf(out,
               "\nqinfer <command> --help shows the options of one command.\n"
               "qinfer --version shows the version and build.\n"
               "\nenvironment:\n"
               "  QINFER_KERNELS=scalar|avx2|avx512  force a kernel path (default: the best this CPU has)\n"
               "  QINFER_KERNEL_OPTS=bf16_widen|bf16_widen_t0|bf16_widen_nopf|bf16_widen_tiled|bf16_widen256|bf16_split3\n"
               "      |bf16_amx  force an exact BF16 dense kernel (amx: Intel AMX tiles, panels of 16+ rows)\n"
               "      (default: a start-up probe picks the fastest, logged once on stderr)\n"
               "  QINFER_KERNEL_OPTS=q8_int|q8_widen|q8_widen_tiled  force the --dense int8 kernel for 1-7 activation rows\n"
               "      (default: a start-up probe picks the faster per host, logged once)\n"
               "  QINFER_KERNEL_OPTS=q4_tiles|q4_pairs  force the GPTQ int4 decode layout (pairs: two tiles read\n"
               "      side by side, avx512; the same results; default: a probe picks the faster, logged once)\n"
               "  QINFER_KERNEL_OPTS=q4_panels|q4_int  force the GPTQ int4 prefill kernel (fp32 panels, or the decode\n"
               "      kernel's integer dot products on 21-bit activations, also where AMX would run them; default: AMX\n"
               "      panels where the BF16 panels run on AMX, else a probe picks the faster, logged once)\n"
               "  QINFER_KERNEL_OPTS=bf16c_nta|bf16c_t0|bf16c_none  force the software prefetch of BF16C\n"
               "      (12-bit BF16) decode rows (the same results; default: a probe picks one, logged once)\n"
               "  QINFER_KERNEL_OPTS=bf16_split  activations as bf16 hi + lo (error 2^-18, logits ~1e-4)\n"
               "  QINFER_KERNEL_OPTS=bf16_dot  opt-in, less exact: round activations to bf16 for BF16\n"
               "      weights (relative error ~2e-3, over the golden 1e-3 budget; as llama.cpp does)\n"
               "  QINFER_PROFILE=1  per-part time breakdown (bench)\n");
}

void version() {
  std::printf("qinfer %s\n", kVersion);
#if defined(__clang__)
  const char* compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  const char* compiler = "gcc " __VERSION__;
#else
  const char* compiler = "unknown compiler";
#endif
#ifdef __OPTIMIZE__
  const char* opt = "optimised";
#else
  const char* opt = "unoptimised";
#endif
#ifdef NDEBUG
  const char* asserts = "assertions off";
#else
  const char* asserts = "assertions on";
#endif
  std::printf("built %s %s with %s, C++ %ld, %s, %s\n", __DATE__, __TIME__, compiler, static_cast<long>(__cplusplus),
              opt, asserts);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    usage(stdout);
    return 0;
  }
  if (first == "--version" || first == "-V" || first == "version") {
    version();
    return 0;
  }
  for (const auto& c : kCommands) {
    if (first != c.name) continue;
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
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  const std::string near = qinfer::nearest_name(first, names);
  if (!near.empty())
    std::fprintf(stderr, "qinfer: unknown command '%s' (did you mean '%s'?)\n", first.c_str(), near.c_str());
  else
    std::fprintf(stderr, "qinfer: unknown command '%s'\n", first.c_str());
  usage(stderr);
  return 2;
}
