#include "chat/py_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/py_format.h"

namespace qinfer::chat {
namespace {

// "ok:<json>" or "error" for one reader, as the golden file records Python's outcome.
std::string outcome(const std::optional<PyValue>& v) {
  if (!v) return "error";
  try {
    return "ok:" + py_json_dumps(*v);
  } catch (const JsonDumpError&) {
    return "error";
  }
}

std::string expected(const nlohmann::json& g) {
  if (g.contains("ok")) return "ok:" + g["ok"].get<std::string>();
  if (g.contains("skip")) return "skip";
  return "error";
}

TEST(PyValue, MatchesPythonGoldens) {
  std::ifstream f(std::string(QINFER_SOURCE_DIR) + "/tests/data/chat/py_golden.json");
  ASSERT_TRUE(f.good()) << "run tools/gen_chat_py_golden.py";
  const auto cases = nlohmann::json::parse(f);
  ASSERT_GT(cases.size(), 50u);
  for (const auto& c : cases) {
    const std::string in = c["input"];
    auto check = [&](const char* reader, const std::string& got) {
      const std::string want = expected(c[reader]);
      if (want == "skip") return;
      EXPECT_EQ(got, want) << reader << "(" << in << ")";
    };
    check("json_loads", outcome(py_json_loads(in)));
    check("literal_eval", outcome(py_literal_eval(in)));
    check("int", outcome(py_int(in)));
    auto fl = py_float(in);
    check("float", fl ? outcome(PyValue::str(py_float_repr(*fl))) : "error");
  }
}

TEST(PyValue, IntOfDouble) {
  EXPECT_EQ(py_int_of_double(1e20), "100000000000000000000");
  EXPECT_EQ(py_int_of_double(-1e20), "-100000000000000000000");
  EXPECT_EQ(py_int_of_double(2.0), "2");
  EXPECT_EQ(py_int_of_double(1.7976931348623157e308).size(), 309u);
}

TEST(PyValue, DumpsEscapesLikePython) {
  PyValue d;
  d.kind = PyValue::Kind::kDict;
  d.dict_set(PyValue::str("q\"uote"), PyValue::str("line\nbreak\ttab\x01 é \x7f"));
  d.dict_set(PyValue::str("n"), PyValue::floating(NAN));
  EXPECT_EQ(py_json_dumps(d), "{\"q\\\"uote\": \"line\\nbreak\\ttab\\u0001 é \x7f\", \"n\": NaN}");
}

TEST(PyValue, DeepNestingFailsInsteadOfCrashing) {
  const std::string deep(100000, '[');
  EXPECT_FALSE(py_json_loads(deep));
  EXPECT_FALSE(py_literal_eval(deep));
}

}  // namespace
}  // namespace qinfer::chat
