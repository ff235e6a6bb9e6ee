// Images through /v1/chat/completions in-process: real tokenizer and chat template, a
// scripted model that has a "vision tower" (it records the images it is given), the
// image served by data: URL, by http:// from a loopback server and by file://.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "jinja/chat_template.h"
#include "scripted_runner.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"
#include "vision/preprocess.h"

namespace qinfer::server {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
constexpr const char* kTokDir = QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5";
const std::string kImages = QINFER_FIXTURES_DIR "/multimodal/mm-s1/images/";
constexpr int kVocab = 248320, kImEnd = 248046, kImagePad = 248056;
constexpr int kHidden = 8;

// The scripted model with a vision tower: encode_images returns zero rows and remembers
// the patch grids it saw.
class VisionRunner : public testing::ScriptedRunner {
 public:
  VisionRunner() : ScriptedRunner(kVocab, kImEnd, 2048) {}
  bool has_vision() const override { return true; }
  int image_token_id() const override { return kImagePad; }
  int64_t hidden_size() const override { return kHidden; }
  std::vector<float> encode_images(const std::vector<const vision::ImagePatches*>& images) override {
    std::lock_guard<std::mutex> lk(mu);
    int64_t rows = 0;
    for (const auto* im : images) {
      grids.push_back({im->grid_h, im->grid_w});
      rows += im->merged_tokens(2);
    }
    ++calls;
    return std::vector<float>(static_cast<size_t>(rows * kHidden), 0.f);
  }
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> grids;
  int calls = 0;
};

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string data_url(const std::string& file) {
  std::string s = read_file(file), out;
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
    for (int k = 3; k >= 0; --k) out += a[(v >> (6 * k)) & 63];
  }
  std::string tail = s.substr(i);
  if (!tail.empty()) {
    uint32_t v = uint8_t(tail[0]) << 16 | (tail.size() > 1 ? uint8_t(tail[1]) << 8 : 0);
    out += a[v >> 18];
    out += a[(v >> 12) & 63];
    out += tail.size() > 1 ? a[(v >> 6) & 63] : '=';
    out += '=';
  }
  return "data:image/png;base64," + out;
}

json image_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

class ImageServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runner = std::make_unique<VisionRunner>();
    runner_ = runner.get();
    engine_ = testing::make_engine(std::move(runner), kTokDir, 4, &tok_);
    ServeOptions so;
    so.model_dir = kTokDir;   // no preprocessor_config.json: the real defaults
    so.host = "127.0.0.1";
    so.port = 0;
    so.served_model_names = {"m"};
    so.max_images_per_prompt = 2;
    so.media.allowed_local_media_path = kImages;
    so.media.fetch_timeout_s = 2;
    server_ = std::make_unique<HttpServer>(*engine_, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
    runner_->set_script(tok_->encode("A red square.", true));
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  httplib::Result chat(const json& content, bool stream = false, json extra = json::object()) {
    json b = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 8},
              {"chat_template_kwargs", {{"enable_thinking", false}}}};
    if (stream) b["stream"] = true, b["stream_options"] = {{"include_usage", true}};
    for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    return c.Post("/v1/chat/completions", b.dump(), "application/json");
  }
  // The prompt length of `content` without images, as the server renders it.
  int64_t text_tokens(const json& content) {
    json msgs = json::array({{{"role", "user"}, {"content", content}}});
    std::string p = engine_->chat_template()->apply(msgs, nullptr, true, {{"enable_thinking", false}});
    return static_cast<int64_t>(tok_->encode(p, true).size());
  }
  void expect_400(const httplib::Result& r, const std::string& param, const std::string& needle = "") {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["param"], param) << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << r->body;
  }

  VisionRunner* runner_ = nullptr;
  Tokenizer* tok_ = nullptr;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ImageServerTest, DataUrlImageReachesTheTowerAndUsageCountsItsTokens) {
  json content = json::array({image_part(data_url(kImages + "img_a_40x56.png")), {{"type", "text"}, {"text", "What is it?"}}});
  auto r = chat(content);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "A red square.");
  // 40x56 -> 224x320: a 14x20 patch grid, 70 merged tokens in place of the one <|image_pad|>.
  json placeholder = json::array({{{"type", "image"}}, {{"type", "text"}, {"text", "What is it?"}}});
  EXPECT_EQ(j["usage"]["prompt_tokens"], text_tokens(placeholder) + 69);
  std::lock_guard<std::mutex> lk(runner_->mu);
  ASSERT_EQ(runner_->grids.size(), 1u);
  EXPECT_EQ(runner_->grids[0], (std::pair<int64_t, int64_t>{14, 20}));
}

TEST_F(ImageServerTest, TwoImagesByFileAndHttpStreaming) {
  httplib::Server media;
  const std::string png_b = read_file(kImages + "img_b_100x70.png");
  media.Get("/b.png", [&](const httplib::Request&, httplib::Response& res) { res.set_content(png_b, "image/png"); });
  int mport = media.bind_to_any_port("127.0.0.1");
  std::thread mth([&] { media.listen_after_bind(); });
  while (!media.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  json content = json::array({{{"type", "input_image"}, {"image_url", "file://" + kImages + "img_a_40x56.png"}},
                              {{"type", "text"}, {"text", "and"}},
                              image_part("http://127.0.0.1:" + std::to_string(mport) + "/b.png")});
  auto r = chat(content, true);
  media.stop();
  mth.join();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string text;
  int64_t prompt_tokens = -1;
  size_t pos = 0;
  while ((pos = r->body.find("data: {", pos)) != std::string::npos) {
    size_t end = r->body.find("\n\n", pos);
    json ev = json::parse(r->body.substr(pos + 6, end - pos - 6));
    if (!ev["choices"].empty() && ev["choices"][0]["delta"].contains("content"))
      text += ev["choices"][0]["delta"]["content"].get<std::string>();
    if (ev.contains("usage") && ev["usage"].is_object()) prompt_tokens = ev["usage"]["prompt_tokens"];
    pos = end;
  }
  EXPECT_EQ(text, "A red square.");
  json placeholder = json::array({{{"type", "image"}}, {{"type", "text"}, {"text", "and"}}, {{"type", "image"}}});
  EXPECT_EQ(prompt_tokens, text_tokens(placeholder) + 69 + 69);   // img_b: 320x224, 70 tokens
  std::lock_guard<std::mutex> lk(runner_->mu);
  ASSERT_EQ(runner_->grids.size(), 2u);
  EXPECT_EQ(runner_->grids[0], (std::pair<int64_t, int64_t>{14, 20}));
  EXPECT_EQ(runner_->grids[1], (std::pair<int64_t, int64_t>{20, 14}));
}

TEST_F(ImageServerTest, ConcurrentImageRequestsBatch) {
  runner_->delay_ms = 5;
  json content = json::array({image_part(data_url(kImages + "img_b_100x70.png")), {{"type", "text"}, {"text", "hi"}}});
  std::vector<std::thread> ths;
  std::vector<int> status(4, 0);
  std::vector<std::string> texts(4);
  for (int i = 0; i < 4; ++i) {
    ths.emplace_back([&, i] {
      auto r = chat(content, i % 2 == 1);
      if (!r) return;
      status[i] = r->status;
      texts[i] = r->body;
    });
  }
  for (auto& t : ths) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(status[i], 200) << texts[i];
    if (i % 2 == 0) {
      EXPECT_EQ(json::parse(texts[i])["choices"][0]["message"]["content"], "A red square.");
    }
  }
  std::lock_guard<std::mutex> lk(runner_->mu);
  EXPECT_EQ(runner_->grids.size(), 4u);
}

TEST_F(ImageServerTest, BadImagesAre400sNamingThePart) {
  json text = {{"type", "text"}, {"text", "x"}};
  expect_400(chat(json::array({text, image_part("data:image/png;base64,!!!")})), "messages[0].content[1].image_url",
             "base64");
  expect_400(chat(json::array({text, image_part("data:image/png;base64,AAAA")})), "messages[0].content[1].image_url");
  expect_400(chat(json::array({text, image_part("file:///etc/passwd")})), "messages[0].content[1].image_url",
             "--allowed-local-media-path");
  expect_400(chat(json::array({text, image_part("http://127.0.0.1:1/x.png")})), "messages[0].content[1].image_url",
             "cannot fetch");
  expect_400(chat(json::array({text, {{"type", "video_url"}, {"video_url", {{"url", "http://x/v.mp4"}}}}})),
             "messages[0].content[1].type", "video");
  json img = image_part(data_url(kImages + "img_a_40x56.png"));
  expect_400(chat(json::array({img, img, img, text})), "messages", "at most 2 image(s)");
  // mm_processor_kwargs: max_pixels lowers the image's token count; a bad key is named.
  auto r = chat(json::array({img, text}), false, {{"mm_processor_kwargs", {{"min_pixels", 1024}, {"max_pixels", 32 * 32 * 4}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  {
    std::lock_guard<std::mutex> lk(runner_->mu);
    ASSERT_FALSE(runner_->grids.empty());
    EXPECT_LE(runner_->grids.back().first * runner_->grids.back().second, 16);
  }
  expect_400(chat(json::array({img, text}), false, {{"mm_processor_kwargs", {{"fps", 2}}}}), "mm_processor_kwargs");
  EXPECT_EQ(runner_->calls, 1);   // no bad request reached the tower
  // The server still answers.
  r = chat("plain text");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace qinfer::server
