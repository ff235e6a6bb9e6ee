#include "sampling/stop_checker.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace qinfer::sampling {
namespace {

// Feeds text in pieces cut at the given offsets; returns (streamed text, final checker state).
struct Run {
  std::string streamed;
  bool stopped = false;
  std::string stop_str;
  std::optional<size_t> cut;
};

Run feed(StopChecker& c, const std::string& text, const std::vector<size_t>& cuts) {
  Run r;
  size_t prev = 0;
  auto piece = [&](size_t end) {
    auto up = c.push(std::string_view(text).substr(prev, end - prev));
    r.streamed += up.text;
    if (up.stopped) {
      r.stopped = true;
      r.stop_str = up.stop_str;
      r.cut = up.cut;
    }
    prev = end;
  };
  for (size_t e : cuts) piece(e);
  piece(text.size());
  if (!r.stopped) r.streamed += c.finish();
  return r;
}

TEST(StopChecker, CutsAtStopStringAndReportsIt) {
  StopChecker c({"STOP"});
  auto r = feed(c, "hello STOP world", {});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.streamed, "hello ");
  EXPECT_EQ(r.stop_str, "STOP");
  EXPECT_EQ(r.cut, 6u);
  EXPECT_EQ(c.text(), "hello ");
  EXPECT_TRUE(c.push("more").text.empty());
}

TEST(StopChecker, IncludeStopStringKeepsIt) {
  StopChecker c({"STOP"}, true);
  auto r = feed(c, "hello STOP world", {3, 8});
  EXPECT_EQ(r.streamed, "hello STOP");
  EXPECT_EQ(r.cut, 10u);
}

TEST(StopChecker, HoldsBackPossibleStartOfStopString) {
  StopChecker c({"</end>"});
  auto up = c.push("abc</e");
  EXPECT_EQ(up.text, "abc");
  up = c.push("x");  // resolved: not a stop string
  EXPECT_EQ(up.text, "</ex");
  up = c.push("<");
  EXPECT_EQ(up.text, "");
  EXPECT_EQ(c.finish(), "<");
}

TEST(StopChecker, EverySplitPointGivesTheSameResult) {
  const std::string text = "one two <<stop>> three";
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b) {
      StopChecker c({"<stop>", "never"});
      auto r = feed(c, text, {a, b});
      ASSERT_TRUE(r.stopped) << a << "," << b;
      EXPECT_EQ(r.streamed, "one two <") << a << "," << b;
      EXPECT_EQ(r.cut, 9u);
    }
  }
}

TEST(StopChecker, FirstListedStopStringWinsWithinOneDelta) {
  // vLLM tries the stop strings in list order, not by position.
  StopChecker c({"bb", "aa"});
  auto r = feed(c, "xaabb", {});
  EXPECT_EQ(r.stop_str, "bb");
  EXPECT_EQ(r.streamed, "xaa");
  StopChecker c2({"bb", "aa"});
  auto r2 = feed(c2, "xaabb", {3});  // "aa" completes first in its own delta
  EXPECT_EQ(r2.stop_str, "aa");
  EXPECT_EQ(r2.streamed, "x");
}

TEST(StopChecker, NoStopsStreamsEverything) {
  StopChecker c({});
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.push("abc").text, "abc");
  EXPECT_EQ(c.finish(), "");
}

TEST(StopChecker, Utf8StopStrings) {
  StopChecker c({"。"});
  auto r = feed(c, "你好。再见", {4, 7});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.streamed, "你好");
}

TEST(StopChecker, EmptyStopStringIsAnError) {
  EXPECT_THROW(StopChecker({"a", ""}), Error);
}

}  // namespace
}  // namespace qinfer::sampling
