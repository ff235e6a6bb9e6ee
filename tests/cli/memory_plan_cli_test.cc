// The memory plan through the CLI: the plan line on stderr, a refusal before any
// weight loads that names the flag that would fit (a tiny fixture under a tiny
// --memory-budget-gb), and bad values of the memory flags.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_shell.h"

namespace qinfer {
namespace {

using RunResult = test::ShellRun;
RunResult run(const std::string& args) { return test::run_shell(std::string(QINFER_BINARY) + " " + args); }

const std::string kModel = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/bf16";

TEST(MemoryPlanCli, PlanLineOnStderr) {
  const RunResult r = run("generate --model " + kModel + " --ids 1,2,3 --max-tokens 2 --memory-budget-gb 4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("memory plan: budget 4.00 GB (--memory-budget-gb); copied "), std::string::npos) << r.out;
}

TEST(MemoryPlanCli, TinyBudgetIsRefusedBeforeLoadingNamingTheFlag) {
  for (const std::string& cmd : std::vector<std::string>{"generate --model " + kModel + " --ids 1,2,3 --max-tokens 2",
                                "bench --model " + kModel + " --prefill 8 --contexts 0 --rounds 1",
                                "serve " + kModel + " --port 0"}) {
    const RunResult r = run(cmd + " --memory-budget-gb 0.001");
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("memory plan: the model needs"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("budget is 1.0 MB (--memory-budget-gb)"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("what would fit: --memory-budget-gb "), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_EQ(r.out.find("loading layers"), std::string::npos) << cmd << ": refused after loading\n" << r.out;
  }
}

TEST(MemoryPlanCli, ContextThatDoesNotFitNamesMaxModelLen) {
  // The weights and reserve fit in 40 MB; the fixture's 4096-token KV for 32 sequences does not.
  const RunResult r = run("generate --model " + kModel + " --ids 1,2,3 --max-tokens 2 --max-model-len 4096 "
                          "--memory-budget-gb 0.04");
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--max-model-len "), std::string::npos) << r.out;
}

TEST(MemoryPlanCli, InspectShowsThePlanOfEachMode) {
  RunResult r = run("inspect " + kModel + " --memory-budget-gb 4 --max-model-len 1024");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* mode : {"--dense bf16   memory plan: budget 4.00 GB", "--dense bf16c  memory plan: budget 4.00 GB",
                           "--dense int8   memory plan: budget 4.00 GB",
                           "--mmap-dense   memory plan: budget 4.00 GB"})
    EXPECT_NE(r.out.find(mode), std::string::npos) << mode << "\n" << r.out;
  EXPECT_NE(r.out.find("(12-bit BF16 at most "), std::string::npos) << r.out;   // the bf16c row
  r = run("inspect " + kModel + " --memory-budget-gb 0.001");
  ASSERT_EQ(r.code, 0) << r.out;   // inspect reports; it does not refuse
  EXPECT_NE(r.out.find("--dense int8   memory plan: the model needs"), std::string::npos) << r.out;
}

TEST(MemoryPlanCli, BadValuesNameTheFlag) {
  RunResult r = run("generate --model " + kModel + " --ids 1 --memory-budget-gb -3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--memory-budget-gb"), std::string::npos) << r.out;
  r = run("generate --model " + kModel + " --ids 1 --experts sometimes");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("option --experts: must be auto, resident or mapped"), std::string::npos) << r.out;
  r = run("serve " + kModel + " --experts sometimes");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("option --experts"), std::string::npos) << r.out;
  r = run("generate --model " + kModel + " --ids 1 --experts mapped --max-tokens 1");   // BF16 fixture: allowed
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string gptq = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s1/gptq";
  r = run("generate --model " + gptq + " --ids 1 --experts mapped --max-tokens 1");   // GPTQ: hot repacked, cold per call
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("file-backed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace qinfer
