// "Did you mean": edit distance and the nearest known name.
#include "util/suggest.h"

#include <gtest/gtest.h>

namespace qinfer {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("generate", "generte"), 1u);
  EXPECT_EQ(edit_distance("chat", "chta"), 1u);  // a swap is one edit
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, NearestName) {
  const std::vector<std::string> cmds = {"generate", "chat", "serve", "logits", "inspect", "synth", "bench"};
  EXPECT_EQ(nearest_name("generte", cmds), "generate");
  EXPECT_EQ(nearest_name("chta", cmds), "chat");
  EXPECT_EQ(nearest_name("gen", cmds), "generate");  // unique prefix
  EXPECT_EQ(nearest_name("s", cmds), "");            // prefix of two: no guess
  EXPECT_EQ(nearest_name("nosuchcommand", cmds), "");
  EXPECT_EQ(nearest_name("", cmds), "");
  EXPECT_EQ(nearest_name("max-token", {"max-tokens", "min-p", "model"}), "max-tokens");
  EXPECT_EQ(nearest_name("modle", {"max-tokens", "min-p", "model"}), "model");
}

}  // namespace
}  // namespace qinfer
