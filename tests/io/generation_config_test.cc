// io/generation_config: the one reader of generation_config.json (server sampling
// defaults and engine stop ids).
#include "io/generation_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

class GenerationConfigTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qinfer_gencfg_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& text) { std::ofstream(dir_ / "generation_config.json") << text; }
  std::string error_of(const std::string& text) {
    write(text);
    try {
      read_generation_config(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

TEST_F(GenerationConfigTest, AbsentFileIsAnEmptyConfig) {
  const GenerationConfig gc = read_generation_config(dir_.string());
  EXPECT_TRUE(gc.json.is_object() && gc.json.empty());
  EXPECT_TRUE(gc.eos_token_ids.empty());
}

TEST_F(GenerationConfigTest, EosAsAnIntOrAListAndTheRestKeptInOrder) {
  write(R"({"top_p": 0.95, "eos_token_id": [248046, 248044], "temperature": 0.6})");
  GenerationConfig gc = read_generation_config(dir_.string());
  EXPECT_EQ(gc.eos_token_ids, (std::vector<int>{248046, 248044}));
  EXPECT_EQ(gc.json.begin().key(), "top_p");  // the file's order, for the server's defaults
  EXPECT_DOUBLE_EQ(gc.json["temperature"].get<double>(), 0.6);
  write(R"({"eos_token_id": 7})");
  EXPECT_EQ(read_generation_config(dir_.string()).eos_token_ids, std::vector<int>{7});
  write(R"({"eos_token_id": null, "do_sample": true})");
  EXPECT_TRUE(read_generation_config(dir_.string()).eos_token_ids.empty());
}

TEST_F(GenerationConfigTest, BadEosIdsAndShapesNameTheFileAndField) {
  for (const char* bad : {R"({"eos_token_id": [1, "2"]})", R"({"eos_token_id": 1099511627776})",
                          R"({"eos_token_id": [-1]})", R"({"eos_token_id": 1.5})", R"({"eos_token_id": "2"})"}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("generation_config.json"), std::string::npos) << bad << " -> " << e;
    EXPECT_NE(e.find("eos_token_id"), std::string::npos) << bad << " -> " << e;
  }
  EXPECT_NE(error_of("[1, 2]").find("must hold a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{\"eos_token_id\": ").find("generation_config.json"), std::string::npos);
}

}  // namespace
}  // namespace qinfer
