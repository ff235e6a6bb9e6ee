#include <gtest/gtest.h>
#include "jinja/template.h"
using namespace qinfer::jinja;
TEST(Smoke, Hello) {
  auto t = Template::parse("Hello {{ name }}!", "t");
  EXPECT_EQ(t.render(Json{{"name", "W"}}), "Hello W!");
}
