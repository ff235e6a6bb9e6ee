// Jinja features templates in the wild use beyond the Qwen templates, compared with
// the real Jinja2: loop.changed, recursive loops, truncate / striptags / slice,
// cycler / joiner, str.casefold, and integers at and past 64 bits. The expected
// strings come from tools/jinja_golden/gaps_golden.py (Debian python3-jinja2 3.1).
#include <gtest/gtest.h>

#include "jinja/template.h"
#include "jinja/template_error.h"

using qinfer::jinja::Json;
using qinfer::jinja::Template;
using qinfer::jinja::TemplateError;

namespace {

struct Case {
  const char* src;
  const char* ctx;
  const char* expected;
};

const Case kCases[] = {
    {"{% for x in xs %}{% if loop.changed(x.g) %}[{{ x.g }}]{% endif %}{{ x.v }}{% endfor %}",
     "{\"xs\": [{\"g\": \"a\", \"v\": 1}, {\"g\": \"a\", \"v\": 2}, {\"g\": \"b\", \"v\": 3}, {\"g\": \"a\", \"v\": 4}]}",
     "[a]12[b]3[a]4"},
    {"{% for x in [1,1,2,2,1] %}{{ loop.changed(x, 0) }},{% endfor %}",
     "{}",
     "True,False,True,False,True,"},
    {"{% for n in tree recursive %}<{{ n.name }}@{{ loop.depth }}/{{ loop.depth0 }}{% if n.children %}{{ loop(n.children) }}{% endif %}>{% endfor %}",
     "{\"tree\": [{\"name\": \"a\", \"children\": [{\"name\": \"b\", \"children\": [{\"name\": \"c\"}]}, {\"name\": \"d\"}]}, {\"name\": \"e\"}]}",
     "<a@1/0<b@2/1<c@3/2>><d@2/1>><e@1/0>"},
    {"{% for n in tree if n.keep recursive %}{{ n.name }}{% if n.c %}({{ loop(n.c) }}){% endif %}{% endfor %}",
     "{\"tree\": [{\"name\": \"a\", \"keep\": 1, \"c\": [{\"name\": \"x\", \"keep\": 0}, {\"name\": \"y\", \"keep\": 1}]}, {\"name\": \"b\", \"keep\": 0}]}",
     "a(y)"},
    {"{{ 'foo bar baz qux quux' | truncate(9) }}",
     "{}",
     "foo..."},
    {"{{ 'foo bar baz qux quux' | truncate(9, true) }}",
     "{}",
     "foo ba..."},
    {"{{ 'foo bar baz qux quux' | truncate(11, false, '!', 0) }}",
     "{}",
     "foo bar!"},
    {"{{ 'short' | truncate(3, leeway=2) }}",
     "{}",
     "short"},
    {"{{ 'abcdefgh' | truncate(5, leeway=0) }}",
     "{}",
     "ab..."},
    {"{{ 'ééé ééé ééé' | truncate(6, leeway=0) }}",
     "{}",
     "ééé..."},
    {"{{ s | truncate }}",
     "{\"s\": \"word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word \"}",
     "word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word..."},
    {"{{ '<p>Hello <b>world</b></p>  <!-- c <x> -->\n\tbye &amp; &lt;ok&gt; &#65;&#x42; &raquo;' | striptags }}",
     "{}",
     "Hello world bye & <ok> AB »"},
    {"{{ 'a <b\nc> d' | striptags }}",
     "{}",
     "a d"},
    {"{{ 5 | striptags }}",
     "{}",
     "5"},
    {"{% for col in [1,2,3,4,5,6,7] | slice(3) %}{{ col | join(',') }};{% endfor %}",
     "{}",
     "1,2,3;4,5;6,7;"},
    {"{% for col in [1,2,3,4,5] | slice(3, 0) %}{{ col | join(',') }};{% endfor %}",
     "{}",
     "1,2;3,4;5,0;"},
    {"{{ [1,2] | slice(4) | list | length }}",
     "{}",
     "4"},
    {"{% for col in 'abcde' | slice(2) %}{{ col | join }}|{% endfor %}",
     "{}",
     "abc|de|"},
    {"{% set c = cycler('odd', 'even') %}{% for i in range(5) %}{{ c.next() }} {% endfor %}{{ c.current }}",
     "{}",
     "odd even odd even odd even"},
    {"{% set c = cycler(1, 2, 3) %}{{ c.next() }}{{ c.next() }}{{ c.reset() }}{{ c.current }}{{ c.next() }}",
     "{}",
     "12None11"},
    {"{% set pipe = joiner('|') %}{% for x in 'abc' %}{{ pipe() }}{{ x }}{% endfor %}",
     "{}",
     "a|b|c"},
    {"{% set j = joiner() %}{{ j() }}a{{ j() }}b{{ j() }}c",
     "{}",
     "a, b, c"},
    {"{{ 'Straße'.casefold() }} {{ 'ΣΑΣ'.casefold() }} {{ 'ǅ'.casefold() }} {{ 'ABC'.casefold() }}",
     "{}",
     "strasse σασ ǆ abc"},
    {"{{ 'Straße'.casefold() == 'STRASSE'.casefold() }} {{ 'Straße'.lower() }}",
     "{}",
     "True straße"},
    {"{{ n }} {{ n == 18446744073709551615 }} {{ n > 9223372036854775807 }}",
     "{\"n\": 18446744073709551615}",
     "18446744073709551615 True True"},
    {"{{ 9223372036854775806 + 1 }}",
     "{}",
     "9223372036854775807"},
};

std::string error_of(const std::string& src, const Json& ctx = Json::object()) {
  try {
    std::string out = Template::parse(src, "gaps.jinja").render(ctx);
    return "no error, rendered: " + out;
  } catch (const TemplateError& e) {
    return e.what();
  }
}

}  // namespace

TEST(JinjaGaps, MatchesJinja2) {
  for (const Case& c : kCases) {
    std::string out;
    try {
      out = Template::parse(c.src, "gaps.jinja").render(Json::parse(c.ctx));
    } catch (const std::exception& e) {
      out = std::string("error: ") + e.what();
    }
    EXPECT_EQ(out, c.expected) << c.src;
  }
}

// Python has exact big integers; qinfer's stop at 64 bits, and going past them is an error
// naming the template, the line and the operation, never a wrapped or rounded value.
TEST(JinjaGaps, IntegersPast64BitsAreAnErrorNotAWrongValue) {
  Json ctx = Json::parse(R"({"n": 18446744073709551615, "m": 9223372036854775807})");
  EXPECT_EQ(error_of("{{ n + 1 }}", ctx),
            "gaps.jinja:1: operator '+': OverflowError: integer 18446744073709551615 is past the 64-bit integers "
            "templates compute with");
  EXPECT_EQ(error_of("\n{{ m + 1 }}", ctx), "gaps.jinja:2: operator '+': OverflowError: integer result does not fit in 64 bits");
  EXPECT_EQ(error_of("{{ m * 2 }}", ctx), "gaps.jinja:1: operator '*': OverflowError: integer result does not fit in 64 bits");
  EXPECT_NE(error_of("{{ 123456789012345678901 + 1 }}").find("gaps.jinja:1"), std::string::npos);
  EXPECT_NE(error_of("{{ 123456789012345678901 + 1 }}").find("integer literal too large"), std::string::npos);
  EXPECT_NE(error_of("{{ 18446744073709551615 - 1 }}").find("operator '-': OverflowError"), std::string::npos);
}

TEST(JinjaGaps, ErrorsOfTheNewFeatures) {
  EXPECT_NE(error_of("{{ 'abc' | truncate(2) }}").find("expected length >= 3, got 2"), std::string::npos);
  EXPECT_NE(error_of("{{ [1] | slice(0) | list }}").find("ZeroDivisionError"), std::string::npos);
  EXPECT_NE(error_of("{{ cycler() }}").find("at least one item"), std::string::npos);
  EXPECT_NE(error_of("{% for x in [1] recursive %}{{ loop() }}{% endfor %}").find("loop()"), std::string::npos);
  // Unbounded recursion stops with an error rather than a crash.
  EXPECT_NE(error_of("{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}").find("RecursionError"),
            std::string::npos);
}
