#include "util/json_parse.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace qinfer {
namespace {

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

TEST(JsonParse, AcceptsNestingUpToTheLimit) {
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "t"));
  auto j = parse_ordered_json(R"({"b": 1, "a": [1, {"c": null}]})", "t");
  EXPECT_EQ(j.begin().key(), "b");
  EXPECT_EQ(j["a"][1]["c"], nullptr);
}

TEST(JsonParse, RefusesDeeperNestingNamingTheField) {
  // A 100k-level body used to be parsed, then copied recursively on a worker's stack.
  try {
    parse_json(nested(100000), "request body");
    FAIL() << "no error";
  } catch (const JsonError& e) {
    EXPECT_TRUE(e.too_deep());
    EXPECT_NE(std::string(e.what()).find("request body: JSON nested deeper than 256 levels"), std::string::npos)
        << e.what();
  }
  std::string deep = "{\"tools\": [{\"x\": 1}, {\"function\": {\"parameters\": ";
  for (int i = 0; i < 300; ++i) deep += "{\"a\": ";
  deep += "1";
  for (int i = 0; i < 300; ++i) deep += "}";
  deep += "}}]}";
  try {
    parse_ordered_json(deep, "request body");
    FAIL() << "no error";
  } catch (const JsonError& e) {
    EXPECT_EQ(e.field().rfind("tools[1].function.parameters.a.a.", 0), 0u) << e.field();
  }
  EXPECT_THROW(parse_json(nested(kMaxJsonDepth + 1), "t"), JsonError);
  EXPECT_THROW(parse_json(std::string(kMaxJsonDepth + 1, '['), "t"), JsonError);
}

TEST(JsonParse, BracketsInsideStringsDoNotCountAsNesting) {
  // The depth is found by a scan of the text before parsing: brackets in strings, also after
  // escaped quotes and backslashes, are not nesting.
  const std::string many(2 * kMaxJsonDepth, '[');
  auto j = parse_json("{\"a\": \"" + many + "\", \"b\": \"x\\\"" + many + "\\\\\", \"c\": [[1]]}", "t");
  EXPECT_EQ(j["a"].get<std::string>(), many);
  EXPECT_EQ(j["b"].get<std::string>(), "x\"" + many + "\\");
  EXPECT_EQ(j["c"][0][0], 1);
  // A string ending in an escaped backslash closes there: the brackets after it count.
  EXPECT_THROW(parse_json("[\"\\\\\", " + nested(kMaxJsonDepth) + "]", "t"), JsonError);
  EXPECT_NO_THROW(parse_json("[\"\\\\\", " + nested(kMaxJsonDepth - 1) + "]", "t"));
}

TEST(JsonParse, ObjectsWithManyMemberObjectsParse) {
  // A safetensors header of the full model: ~20,000 tensors per shard, each an object. (The
  // callback parser was quadratic in that count; bench_model json_parse_header times it.)
  std::string h = "{";
  for (int i = 0; i < 20000; ++i)
    h += (i ? ",\"t" : "\"t") + std::to_string(i) + "\": {\"dtype\": \"I32\", \"shape\": [1, 2], \"data_offsets\": [0, 8]}";
  h += "}";
  auto j = parse_json(h, "header");
  ASSERT_EQ(j.size(), 20000u);
  EXPECT_EQ(j["t19999"]["shape"][1], 2);
}

TEST(JsonParse, SyntaxErrorsNameTheSource) {
  try {
    parse_json("{\"a\": ", "/x/config.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_FALSE(e.too_deep());
    EXPECT_EQ(std::string(e.what()).rfind("/x/config.json: malformed JSON", 0), 0u) << e.what();
  }
  EXPECT_THROW(parse_json("\"\xff\"", "t"), JsonError);  // invalid UTF-8
}

TEST(JsonParse, ReadsOnlyRegularFiles) {
  std::string dir = testing::TempDir() + "/json_parse_test";
  ::mkdir(dir.c_str(), 0755);
  std::string fifo = dir + "/fifo.json";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Opening a FIFO with no writer would block forever; it must be refused at once.
  try {
    read_json_file(fifo);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_json_file(dir), Error);
  EXPECT_THROW(read_json_file("/dev/zero"), Error);
  std::string f = dir + "/ok.json";
  std::ofstream(f) << "{\"k\": [1, 2]}";
  EXPECT_EQ(read_json_file(f)["k"][1], 2);
  ::unlink(fifo.c_str());
}

}  // namespace
}  // namespace qinfer
