// Decoding of every supported format against the RGB bytes PIL + vLLM's
// convert_image_mode give (tests/data/vision/make_images.py), and the error cases.
#include <gtest/gtest.h>

#include "vision_test_util.h"
#include "util/error.h"
#include "vision/image_decode.h"

namespace qinfer::vision {
namespace {

using test::read_raw;
using test::vision_data;

class DecodeMatchesPil : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeMatchesPil, SameRgbAsPil) {
  const std::string path = vision_data() + "/" + GetParam();
  RgbImage img = load_image_file(path);
  EXPECT_EQ(img.height, 17);
  EXPECT_EQ(img.width, 23);
  auto want = read_raw<uint8_t>(path + ".rgb");
  ASSERT_EQ(img.rgb.size(), want.size());
  int diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff += img.rgb[i] != want[i];
  EXPECT_EQ(diff, 0) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Formats, DecodeMatchesPil,
                         ::testing::Values("rgb.png", "rgba.png", "grey.png", "la.png", "palette.png", "baseline.jpg",
                                           "progressive.jpg", "grey.jpg", "rgb.webp", "rgba.webp", "anim.gif"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(ImageDecode, Png16BitKeepsTheHighByte) {
  // PIL opens a 16-bit grey PNG as mode "I" and convert("RGB") clips it to 255
  // (white); qinfer keeps the high byte of each sample instead (documented difference).
  RgbImage img = load_image_file(vision_data() + "/grey16.png");
  ASSERT_EQ(img.rgb.size(), 23u * 17u * 3u);
  for (int y = 0; y < 17; ++y)
    for (int x = 0; x < 23; ++x) {
      const int v = (x * 2741 + y * 1913) % 65536;
      ASSERT_EQ(img.rgb[(y * 23 + x) * 3], v >> 8) << x << "," << y;
      ASSERT_EQ(img.rgb[(y * 23 + x) * 3 + 2], v >> 8);
    }
}

TEST(ImageDecode, FixturePngEqualsItsRawRgb) {
  const std::string d = test::vision_fixtures() + "/images/";
  RgbImage a = load_image_file(d + "img_a_40x56.png");
  EXPECT_EQ(a.height, 40);
  EXPECT_EQ(a.width, 56);
  EXPECT_EQ(a.rgb, read_raw<uint8_t>(d + "img_a.rgb_u8.bin"));
}

std::string error_of(const std::vector<uint8_t>& bytes, int64_t max_pixels = kDefaultMaxImagePixels) {
  try {
    decode_image(bytes, "img.bin", max_pixels);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ImageDecode, TruncatedFilesAreErrorsNamingTheSource) {
  for (const char* name : {"rgb.png", "baseline.jpg", "progressive.jpg", "rgb.webp", "anim.gif"}) {
    auto bytes = read_raw<uint8_t>(vision_data() + "/" + name);
    // (the GIF's first frame ends before 3/4 of the file: only earlier cuts break it)
    const size_t late = std::string(name) == "anim.gif" ? bytes.size() / 3 : bytes.size() * 3 / 4;
    for (size_t keep : {bytes.size() / 2, late, size_t(20)}) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + keep);
      const std::string e = error_of(cut);
      EXPECT_NE(e.find("img.bin"), std::string::npos) << name << " cut to " << keep << ": '" << e << "'";
    }
  }
}

TEST(ImageDecode, CorruptDataIsAnError) {
  auto bytes = read_raw<uint8_t>(vision_data() + "/rgb.png");
  for (size_t i = 40; i < bytes.size() - 12; ++i) bytes[i] ^= 0x5a;
  EXPECT_NE(error_of(bytes).find("corrupt"), std::string::npos) << error_of(bytes);
}

TEST(ImageDecode, UnknownAndEmpty) {
  EXPECT_NE(error_of({'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}).find("not a supported image format"),
            std::string::npos);
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
}

TEST(ImageDecode, PixelLimitCheckedBeforeDecoding) {
  // Every format: a 23x17 = 391-pixel image against a limit of 390.
  for (const char* name : {"rgb.png", "baseline.jpg", "rgb.webp", "anim.gif"}) {
    auto bytes = read_raw<uint8_t>(vision_data() + "/" + name);
    const std::string e = error_of(bytes, 390);
    EXPECT_NE(e.find("decompression bomb"), std::string::npos) << name << ": " << e;
    EXPECT_EQ(error_of(bytes, 391), "") << name;
  }
  // A PNG header declaring 100000 x 100000 pixels with no data behind it.
  auto png = read_raw<uint8_t>(vision_data() + "/rgb.png");
  std::vector<uint8_t> bomb(png.begin(), png.begin() + 33);   // signature + IHDR
  for (int k : {16, 20}) {
    bomb[k] = 0; bomb[k + 1] = 0x01; bomb[k + 2] = 0x86; bomb[k + 3] = 0xA0;   // 100000
  }
  uint32_t crc = 0xffffffffu;   // CRC-32 of the chunk type and data, so libpng accepts the header
  for (int i = 12; i < 29; ++i) {
    crc ^= bomb[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  for (int i = 0; i < 4; ++i) bomb[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  const std::string e = error_of(bomb);
  EXPECT_NE(e.find("10000000000 pixels"), std::string::npos) << e;
}

TEST(ImageDecode, Sniff) {
  auto png = read_raw<uint8_t>(vision_data() + "/rgb.png");
  EXPECT_EQ(sniff_format(png.data(), png.size()), ImageFormat::kPng);
  auto gif = read_raw<uint8_t>(vision_data() + "/anim.gif");
  EXPECT_EQ(sniff_format(gif.data(), gif.size()), ImageFormat::kGif);
}

}  // namespace
}  // namespace qinfer::vision
