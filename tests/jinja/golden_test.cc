// Byte-for-byte comparison with Jinja2 + Hugging Face's environment, using the
// goldens written by tools/jinja_golden/make_golden.py (committed; no Python needed).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "jinja/chat_template.h"
#include "jinja/template.h"
#include "jinja/template_error.h"

using qinfer::jinja::Json;
using qinfer::jinja::TemplateError;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read test data file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Json load_json(const std::string& rel) { return Json::parse(read(std::string(QINFER_SOURCE_DIR) + "/" + rel)); }

// Line of the first `raise_exception('<msg>')` in the template source.
int raise_line(const std::string& src, const std::string& msg) {
  size_t pos = src.find("raise_exception('" + msg + "')");
  if (pos == std::string::npos) return -1;
  int line = 1;
  for (size_t i = 0; i < pos; ++i) line += src[i] == '\n';
  return line;
}

void check_error(const Json& expected, const std::function<void()>& fn, const std::string& src,
                 const std::string& what) {
  std::string kind = expected["error"].get<std::string>();
  std::string msg = expected["message"].get<std::string>();
  try {
    fn();
    ADD_FAILURE() << what << ": expected error " << kind << ": " << msg;
  } catch (const TemplateError& e) {
    if (kind == "raised") {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Raised) << what << ": " << e.what();
      EXPECT_EQ(e.detail(), msg) << what;
      int line = raise_line(src, msg);
      if (line > 0) {
        EXPECT_EQ(e.line(), line) << what << ": " << e.what();
      }
      EXPECT_NE(std::string(e.what()).find(":" + std::to_string(e.line()) + ": raise_exception: " + msg),
                std::string::npos) << e.what();
    } else if (kind == "syntax" || kind == "SyntaxError") {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax) << what << ": " << e.what();
      if (expected.contains("line")) {
        EXPECT_EQ(e.line(), expected["line"].get<int>()) << what << ": " << e.what();
      }
    } else {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime) << what << ": " << e.what();
      EXPECT_NE(e.detail().find(msg), std::string::npos) << what << ": got " << e.what() << "\nwant " << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong exception type: " << e.what();
  }
}

}  // namespace

TEST(QwenChatGoldens, BothTemplatesMatchJinja2) {
  Json g = load_json("tests/data/jinja/qwen_chat_goldens.json");
  ASSERT_GE(g["cases"].size(), 30u);
  std::map<std::string, std::pair<std::string, qinfer::ChatTemplate>> tmpls;
  for (auto it = g["templates"].begin(); it != g["templates"].end(); ++it) {
    std::string path = std::string(QINFER_SOURCE_DIR) + "/" + it.value().get<std::string>();
    std::string src = read(path);
    tmpls.emplace(it.key(), std::make_pair(src, qinfer::ChatTemplate::from_string(src, "chat_template.jinja")));
  }
  ASSERT_EQ(tmpls.size(), 2u);
  int outputs = 0, errors = 0;
  for (const auto& c : g["cases"]) {
    for (auto it = c["results"].begin(); it != c["results"].end(); ++it) {
      const auto& [src, ct] = tmpls.at(it.key());
      std::string what = c["name"].get<std::string>() + " / " + it.key();
      auto run = [&, &ct = ct] { return ct.apply(c["messages"], c["tools"], c["add_generation_prompt"].get<bool>(), c["kwargs"]); };
      if (it.value().contains("output")) {
        ++outputs;
        try {
          EXPECT_EQ(run(), it.value()["output"].get<std::string>()) << what;
        } catch (const std::exception& e) {
          ADD_FAILURE() << what << ": " << e.what();
        }
      } else {
        ++errors;
        check_error(it.value(), [&] { run(); }, src, what);
      }
    }
  }
  EXPECT_GE(outputs, 60);
  EXPECT_GE(errors, 10);
}

TEST(SnippetGoldens, ExpressionLanguageMatchesJinja2) {
  Json g = load_json("tests/data/jinja/snippet_goldens.json");
  ASSERT_GE(g["snippets"].size(), 100u);
  for (const auto& s : g["snippets"]) {
    std::string name = s["name"].get<std::string>();
    std::string src = s["template"].get<std::string>();
    const Json& want = s["result"];
    auto run = [&] { return qinfer::jinja::Template::parse(src, name).render(s["context"]); };
    if (want.contains("output")) {
      try {
        EXPECT_EQ(run(), want["output"].get<std::string>()) << name << "\n" << src;
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << ": " << e.what() << "\n" << src;
      }
    } else {
      check_error(want, [&] { run(); }, src, name);
    }
  }
}
