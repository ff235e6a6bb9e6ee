// Image URLs of chat requests: base64, data: URLs, file:// under --allowed-local-media-path,
// http:// fetched from a server on 127.0.0.1 (timeout, byte limit, status), decoding errors.
#include "server/image_input.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/api_error.h"

namespace qinfer::server {
namespace {

namespace fs = std::filesystem;
const std::string kPng = QINFER_FIXTURES_DIR "/multimodal/mm-s1/images/img_a_40x56.png";
const std::string kField = "messages[0].content[1].image_url";

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string b64(const std::string& s) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
    for (int k = 3; k >= 0; --k) out += a[(v >> (6 * k)) & 63];
  }
  if (s.size() - i == 1) {
    uint32_t v = uint8_t(s[i]) << 16;
    out += a[v >> 18];
    out += a[(v >> 12) & 63];
    out += "==";
  } else if (s.size() - i == 2) {
    uint32_t v = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
    out += a[v >> 18];
    out += a[(v >> 12) & 63];
    out += a[(v >> 6) & 63];
    out += "=";
  }
  return out;
}

// The ApiError of f(): status 400, param `field`, and `needle` in the message.
template <class F>
void expect_400(F f, const std::string& needle, const std::string& field = kField) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one mentioning '" << needle << "')";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << e.what();
    EXPECT_EQ(e.param(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(field, 0), 0u) << "the message names the field first: " << e.what();
  }
}

TEST(Base64, DecodesAndRejects) {
  std::vector<uint8_t> out;
  for (std::string s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\x00\xff\x10", 3)}) {
    ASSERT_TRUE(base64_decode(b64(s), out)) << s;
    EXPECT_EQ(std::string(out.begin(), out.end()), s);
  }
  EXPECT_TRUE(base64_decode("Zm9v\nYmFy", out));   // whitespace skipped
  EXPECT_EQ(std::string(out.begin(), out.end()), "foobar");
  EXPECT_TRUE(base64_decode("Zm8", out));          // padding optional
  EXPECT_EQ(std::string(out.begin(), out.end()), "fo");
  EXPECT_FALSE(base64_decode("Zm9v!", out));
  EXPECT_FALSE(base64_decode("Z", out));           // 1 digit in the last quantum
  EXPECT_FALSE(base64_decode("Zg==Zg==", out));    // data after padding
  EXPECT_FALSE(base64_decode("Zg===", out));
  EXPECT_FALSE(base64_decode("Zm9-", out));        // URL-safe alphabet is not standard base64
}

TEST(ImageUrl, DataUrls) {
  MediaOptions o;
  const std::string png = read_file(kPng);
  ASSERT_FALSE(png.empty());
  auto bytes = fetch_image_bytes("data:image/png;base64," + b64(png), kField, o);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), png);
  expect_400([&] { fetch_image_bytes("data:image/png;base64,@@@@", kField, o); }, "not valid base64");
  expect_400([&] { fetch_image_bytes("data:image/png," + png.substr(0, 10), kField, o); }, "only base64 data URLs");
  expect_400([&] { fetch_image_bytes("data:image/png;base64", kField, o); }, "no ','");
  expect_400([&] { fetch_image_bytes("data:text/plain;base64,AAAA", kField, o); }, "not an image type");
  expect_400([&] { fetch_image_bytes("data:image/png;base64,", kField, o); }, "no data");
  expect_400([&] { fetch_image_bytes("ftp://127.0.0.1/a.png", kField, o); }, "unsupported image URL");
  expect_400([&] { fetch_image_bytes(b64(png), kField, o); }, "unsupported image URL");
  o.max_image_bytes = 100;
  expect_400([&] { fetch_image_bytes("data:image/png;base64," + b64(png), kField, o); }, "larger than the limit");
}

TEST(ImageUrl, DecodeErrorsNameTheField) {
  MediaOptions o;
  vision::ProcessorConfig pc;
  const std::string png = read_file(kPng);
  auto imgs = load_request_images({{kField, "data:image/png;base64," + b64(png)}}, pc, o);
  ASSERT_TRUE(imgs);
  ASSERT_EQ(imgs->size(), 1u);
  EXPECT_EQ((*imgs)[0].grid_h, 14);   // 40x56 -> 224x320 with the real min_pixels (the fixture's hf value)
  EXPECT_EQ((*imgs)[0].grid_w, 20);
  expect_400([&] { load_request_images({{kField, "data:image/png;base64," + b64("not an image")}}, pc, o); },
             "");
  expect_400([&] { load_request_images({{kField, "data:image/png;base64," + b64(png.substr(0, png.size() / 2))}}, pc, o); },
             "");
  o.max_pixels = 40 * 56 - 1;   // the declared size is over the limit: refused before decoding
  expect_400([&] { load_request_images({{kField, "data:image/png;base64," + b64(png)}}, pc, o); }, "");
  // The second image's failure names the second image's field.
  o.max_pixels = vision::kDefaultMaxImagePixels;
  const std::string f2 = "messages[1].content[0].image_url";
  expect_400([&] { load_request_images({{kField, "data:image/png;base64," + b64(png)}, {f2, "data:image/png;base64,AA"}}, pc, o); },
             "", f2);
}

TEST(ImageUrl, FileUrlsOnlyInsideTheAllowedFolder) {
  const fs::path root = fs::temp_directory_path() / ("qinfer_media_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "allowed" / "sub");
  fs::create_directories(root / "outside");
  fs::copy_file(kPng, root / "allowed" / "sub" / "a b.png");
  fs::copy_file(kPng, root / "outside" / "secret.png");
  fs::create_symlink(root / "outside" / "secret.png", root / "allowed" / "link.png");
  MediaOptions o;
  const std::string inside = "file://" + (root / "allowed" / "sub" / "a%20b.png").string();
  expect_400([&] { fetch_image_bytes(inside, kField, o); }, "--allowed-local-media-path");
  o.allowed_local_media_path = (root / "allowed").string();
  EXPECT_EQ(fetch_image_bytes(inside, kField, o).size(), fs::file_size(kPng));
  expect_400([&] { fetch_image_bytes("file://" + (root / "outside" / "secret.png").string(), kField, o); },
             "must be a subpath of --allowed-local-media-path");
  expect_400([&] { fetch_image_bytes("file://" + (root / "allowed" / ".." / "outside" / "secret.png").string(), kField, o); },
             "must be a subpath");
  expect_400([&] { fetch_image_bytes("file://" + (root / "allowed" / "link.png").string(), kField, o); },
             "must be a subpath");   // a symlink out of the folder
  expect_400([&] { fetch_image_bytes("file://" + (root / "allowed" / "none.png").string(), kField, o); },
             "no such file");
  expect_400([&] { fetch_image_bytes("file://" + (root / "allowed" / "sub").string(), kField, o); },
             "not a regular file");
  expect_400([&] { fetch_image_bytes("file://relative/a.png", kField, o); }, "absolute path");
  fs::remove_all(root);
}

TEST(ImageUrl, HttpFetchFromLoopback) {
  const std::string png = read_file(kPng);
  httplib::Server svr;
  svr.Get("/a.png", [&](const httplib::Request&, httplib::Response& res) { res.set_content(png, "image/png"); });
  svr.Get("/moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/a.png"); });
  svr.Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(4096, 'x'), "image/png");
  });
  svr.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("image/png", [](size_t off, httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      if (off > 100000) return false;
      sink.write("xxxxxxxx", 8);
      return true;
    });
  });
  int port = svr.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread th([&] { svr.listen_after_bind(); });
  while (!svr.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  MediaOptions o;
  o.fetch_timeout_s = 0.6;
  o.max_image_bytes = 2048;
  EXPECT_EQ(fetch_image_bytes(base + "/a.png", kField, o).size(), png.size());
  EXPECT_EQ(fetch_image_bytes(base + "/moved", kField, o).size(), png.size());
  expect_400([&] { fetch_image_bytes(base + "/missing.png", kField, o); }, "returned HTTP 404");
  expect_400([&] { fetch_image_bytes(base + "/big", kField, o); }, "larger than the limit");
  auto t0 = std::chrono::steady_clock::now();
  expect_400([&] { fetch_image_bytes(base + "/slow", kField, o); }, "timed out");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  svr.stop();
  th.join();
  // Nothing listens there any more.
  expect_400([&] { fetch_image_bytes(base + "/a.png", kField, o); }, "cannot fetch");
}

}  // namespace
}  // namespace qinfer::server
