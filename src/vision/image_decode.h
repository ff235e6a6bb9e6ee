// Image files (PNG, JPEG baseline/progressive, WebP, GIF first frame) decoded
// into 8-bit RGB with the Debian libraries (libpng, libjpeg-turbo, libwebp,
// giflib), converted the way vLLM / the HF processor do it through PIL:
//  * RGBA (PNG colour type 6, WebP with alpha) is composited onto white
//    (vLLM rgba_to_rgb: Image.paste with the alpha mask, PIL's integer blend);
//  * every other mode is PIL's convert("RGB"): grey is replicated, a palette is
//    looked up, grey+alpha and palette transparency (tRNS, GIF) are dropped;
//  * 16-bit samples keep their high byte (PIL reads 16-bit RGB(A) PNGs as 8-bit).
// Hostile input: the declared size is checked against max_pixels before any
// pixel is decoded; truncated/corrupt data and unknown formats are Errors that
// name the source (a file name or "image 2 of the request").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::vision {

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;   // [height][width][3]
};

// PIL's Image.MAX_IMAGE_PIXELS (its decompression-bomb warning limit).
constexpr int64_t kDefaultMaxImagePixels = 89478485;

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp, kGif };
ImageFormat sniff_format(const uint8_t* data, size_t n);   // from the magic bytes
const char* format_name(ImageFormat f);

RgbImage decode_image(const uint8_t* data, size_t n, const std::string& source,
                      int64_t max_pixels = kDefaultMaxImagePixels);
RgbImage decode_image(const std::vector<uint8_t>& bytes, const std::string& source,
                      int64_t max_pixels = kDefaultMaxImagePixels);
// Reads the whole file (at most max_file_bytes) and decodes it; errors name the path.
RgbImage load_image_file(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels,
                         int64_t max_file_bytes = int64_t(1) << 30);

// PIL's paste-with-mask blend of one channel value over white.
inline uint8_t blend_over_white(uint8_t c, uint8_t a) {
  auto muldiv255 = [](int x, int y) { int t = x * y + 128; return ((t >> 8) + t) >> 8; };
  return static_cast<uint8_t>(muldiv255(255, 255 - a) + muldiv255(c, a));
}

}  // namespace qinfer::vision
