#include "vision/image_decode.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <gif_lib.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include "util/error.h"

namespace qinfer::vision {

ImageFormat sniff_format(const uint8_t* d, size_t n) {
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return ImageFormat::kPng;
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return ImageFormat::kJpeg;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::kWebp;
  if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0)) return ImageFormat::kGif;
  return ImageFormat::kUnknown;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kGif: return "GIF";
    default: return "unknown";
  }
}

namespace {

void check_size(const std::string& src, const char* fmt, int64_t w, int64_t h, int64_t max_pixels) {
  if (w <= 0 || h <= 0) fail(src, ": ", fmt, " image has an empty size ", w, "x", h);
  if (w > max_pixels / h)
    fail(src, ": ", fmt, " image of ", w, "x", h, " = ", w * h, " pixels is larger than the limit of ", max_pixels,
         " pixels (a possible decompression bomb); refused before decoding");
}

// ---------------------------------------------------------------- PNG
struct PngReader {
  const uint8_t* data;
  size_t n, pos;
  std::string err;
};

void png_read_mem(png_structp p, png_bytep out, png_size_t len) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(p));
  if (r->pos + len > r->n) {
    r->err = "the PNG data is truncated";
    png_error(p, "truncated");
  }
  std::memcpy(out, r->data + r->pos, len);
  r->pos += len;
}
void png_on_error(png_structp p, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(p));
  if (r && r->err.empty()) r->err = msg;
  png_longjmp(p, 1);
}
void png_on_warning(png_structp, png_const_charp) {}

RgbImage decode_png(const uint8_t* data, size_t n, const std::string& src, int64_t max_pixels) {
  // The declared size straight from IHDR, before libpng reads any further.
  if (n >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
    auto be32 = [&](size_t o) {
      return (int64_t(data[o]) << 24) | (int64_t(data[o + 1]) << 16) | (int64_t(data[o + 2]) << 8) | data[o + 3];
    };
    check_size(src, "PNG", be32(16), be32(20), max_pixels);
  }
  PngReader rd{data, n, 0, {}};
  png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &rd, png_on_error, png_on_warning);
  if (!p) fail(src, ": out of memory starting the PNG decoder");
  png_infop info = png_create_info_struct(p);
  RgbImage img;
  std::vector<uint8_t> tmp;
  std::vector<png_bytep> rows;
  std::string size_error;
  if (setjmp(png_jmpbuf(p))) {
    png_destroy_read_struct(&p, &info, nullptr);
    if (!size_error.empty()) throw Error(size_error);
    fail(src, ": corrupt or truncated PNG: ", rd.err.empty() ? "decoder error" : rd.err);
  }
  png_set_read_fn(p, &rd, png_read_mem);
  png_set_user_limits(p, 0x7fffffff, 0x7fffffff);
  png_read_info(p, info);
  const int64_t w = png_get_image_width(p, info), h = png_get_image_height(p, info);
  try {
    check_size(src, "PNG", w, h, max_pixels);
  } catch (const Error& e) {
    size_error = e.what();
    png_longjmp(p, 1);
  }
  const int ct = png_get_color_type(p, info);
  const int depth = png_get_bit_depth(p, info);
  // PIL's modes: RGBA (type 6) -> composite on white; everything else -> RGB
  // with alpha/transparency dropped.
  const bool composite = ct == PNG_COLOR_TYPE_RGB_ALPHA;
  if (depth == 16) png_set_strip_16(p);
  if (ct == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
  if (ct == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(p);
  if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(p);
  if (!composite) png_set_strip_alpha(p);   // GA alpha; tRNS is not expanded (never png_set_tRNS_to_alpha)
  png_set_interlace_handling(p);
  png_read_update_info(p, info);
  const size_t rowbytes = png_get_rowbytes(p, info);
  const int channels = png_get_channels(p, info);
  if (channels != (composite ? 4 : 3)) {
    rd.err = "unexpected channel count after conversion";
    png_error(p, "channels");
  }
  tmp.resize(rowbytes * h);
  rows.resize(h);
  for (int64_t y = 0; y < h; ++y) rows[y] = tmp.data() + y * rowbytes;
  png_read_image(p, rows.data());
  png_read_end(p, nullptr);
  png_destroy_read_struct(&p, &info, nullptr);
  img.height = h;
  img.width = w;
  if (!composite) {
    img.rgb.resize(h * w * 3);
    for (int64_t y = 0; y < h; ++y) std::memcpy(img.rgb.data() + y * w * 3, rows[y], w * 3);
  } else {
    img.rgb.resize(h * w * 3);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t* s = rows[y] + x * 4;
        uint8_t* d = img.rgb.data() + (y * w + x) * 3;
        for (int c = 0; c < 3; ++c) d[c] = blend_over_white(s[c], s[3]);
      }
  }
  return img;
}

// ---------------------------------------------------------------- JPEG
struct JpegErr {
  jpeg_error_mgr mgr;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
};
void jpeg_on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErr*>(c->err);
  (*c->err->format_message)(c, e->msg);
  longjmp(e->jb, 1);
}
void jpeg_on_message(j_common_ptr c, int level) {
  if (level < 0) ++c->err->num_warnings;   // corrupt-data warnings (e.g. premature end of file)
}

RgbImage decode_jpeg(const uint8_t* data, size_t n, const std::string& src, int64_t max_pixels) {
  jpeg_decompress_struct cinfo;
  JpegErr err;
  err.msg[0] = 0;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  RgbImage img;
  std::string size_error;
  int64_t lines = 0;
  if (setjmp(err.jb)) {
    jpeg_destroy_decompress(&cinfo);
    if (!size_error.empty()) throw Error(size_error);
    fail(src, ": corrupt or truncated JPEG: ", err.msg);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(n));
  jpeg_read_header(&cinfo, TRUE);
  try {
    check_size(src, "JPEG", cinfo.image_width, cinfo.image_height, max_pixels);
  } catch (const Error& e) {
    size_error = e.what();
    longjmp(err.jb, 1);
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    size_error = cat(src, ": CMYK/YCCK JPEG images are not supported (convert it to RGB)");
    longjmp(err.jb, 1);
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  img.width = cinfo.output_width;
  img.height = cinfo.output_height;
  img.rgb.resize(img.width * img.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.rgb.data() + static_cast<size_t>(cinfo.output_scanline) * img.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
    ++lines;
  }
  // A truncated stream gives a warning (premature end) and grey lines in libjpeg; refuse it.
  const bool truncated = err.mgr.num_warnings > 0;
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (truncated) fail(src, ": corrupt or truncated JPEG (the decoder reported damaged or missing data)");
  return img;
}

// ---------------------------------------------------------------- WebP
RgbImage decode_webp(const uint8_t* data, size_t n, const std::string& src, int64_t max_pixels) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, n, &f) != VP8_STATUS_OK) fail(src, ": corrupt or truncated WebP header");
  check_size(src, "WebP", f.width, f.height, max_pixels);
  if (f.has_animation) fail(src, ": animated WebP images are not supported");
  RgbImage img;
  img.width = f.width;
  img.height = f.height;
  const int64_t px = img.width * img.height;
  if (!f.has_alpha) {
    img.rgb.resize(px * 3);
    if (!WebPDecodeRGBInto(data, n, img.rgb.data(), img.rgb.size(), static_cast<int>(img.width * 3)))
      fail(src, ": corrupt or truncated WebP data");
    return img;
  }
  std::vector<uint8_t> rgba(px * 4);
  if (!WebPDecodeRGBAInto(data, n, rgba.data(), rgba.size(), static_cast<int>(img.width * 4)))
    fail(src, ": corrupt or truncated WebP data");
  img.rgb.resize(px * 3);
  for (int64_t i = 0; i < px; ++i)
    for (int c = 0; c < 3; ++c) img.rgb[i * 3 + c] = blend_over_white(rgba[i * 4 + c], rgba[i * 4 + 3]);
  return img;
}

// ---------------------------------------------------------------- GIF
struct GifMem {
  const uint8_t* data;
  size_t n, pos;
};
int gif_read_mem(GifFileType* g, GifByteType* out, int len) {
  auto* m = static_cast<GifMem*>(g->UserData);
  size_t k = std::min(static_cast<size_t>(len), m->n - m->pos);
  std::memcpy(out, m->data + m->pos, k);
  m->pos += k;
  return static_cast<int>(k);
}

RgbImage decode_gif(const uint8_t* data, size_t n, const std::string& src, int64_t max_pixels) {
  GifMem mem{data, n, 0};
  int err = 0;
  GifFileType* g = DGifOpen(&mem, gif_read_mem, &err);
  if (!g) fail(src, ": corrupt GIF: ", GifErrorString(err));
  struct Closer {
    GifFileType* g;
    ~Closer() { int e; DGifCloseFile(g, &e); }
  } closer{g};
  auto gif_fail = [&](const char* what) {
    const char* s = GifErrorString(g->Error);
    fail(src, ": corrupt or truncated GIF (", what, s ? cat(": ", s) : std::string(), ")");
  };
  check_size(src, "GIF", g->SWidth, g->SHeight, max_pixels);
  RgbImage img;
  img.width = g->SWidth;
  img.height = g->SHeight;
  // Canvas: the background colour of the global palette (PIL draws the first
  // frame over it); transparency is dropped by convert("RGB").
  img.rgb.assign(img.width * img.height * 3, 0);
  if (g->SColorMap && g->SBackGroundColor < g->SColorMap->ColorCount) {
    const GifColorType c = g->SColorMap->Colors[g->SBackGroundColor];
    for (int64_t i = 0; i < img.width * img.height; ++i) {
      img.rgb[i * 3] = c.Red;
      img.rgb[i * 3 + 1] = c.Green;
      img.rgb[i * 3 + 2] = c.Blue;
    }
  }
  int transparent = -1;
  while (true) {
    GifRecordType rt;
    if (DGifGetRecordType(g, &rt) == GIF_ERROR) gif_fail("record");
    if (rt == TERMINATE_RECORD_TYPE) fail(src, ": the GIF has no image frame");
    if (rt == EXTENSION_RECORD_TYPE) {
      int code;
      GifByteType* ext;
      if (DGifGetExtension(g, &code, &ext) == GIF_ERROR) gif_fail("extension");
      if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4 && (ext[1] & 1)) transparent = ext[4];
      while (ext) {
        if (DGifGetExtensionNext(g, &ext) == GIF_ERROR) gif_fail("extension");
      }
      continue;
    }
    if (rt != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(g) == GIF_ERROR) gif_fail("image descriptor");
    const GifImageDesc& d = g->Image;
    check_size(src, "GIF frame", d.Width, d.Height, max_pixels);
    const ColorMapObject* cmap = d.ColorMap ? d.ColorMap : g->SColorMap;
    if (!cmap) fail(src, ": the GIF frame has no colour table");
    std::vector<GifPixelType> line(d.Width);
    std::vector<int> order(d.Height);
    if (d.Interlace) {
      int k = 0;
      const int starts[4] = {0, 4, 2, 1}, steps[4] = {8, 8, 4, 2};
      for (int pass = 0; pass < 4; ++pass)
        for (int y = starts[pass]; y < d.Height; y += steps[pass]) order[k++] = y;
    } else {
      for (int y = 0; y < d.Height; ++y) order[y] = y;
    }
    for (int i = 0; i < d.Height; ++i) {
      if (DGifGetLine(g, line.data(), d.Width) == GIF_ERROR) gif_fail("pixel data");
      const int64_t y = d.Top + order[i];
      if (y < 0 || y >= img.height) continue;
      for (int x = 0; x < d.Width; ++x) {
        const int64_t cx = d.Left + x;
        if (cx < 0 || cx >= img.width) continue;
        int idx = line[x];
        if (idx == transparent) continue;
        if (idx >= cmap->ColorCount) idx = 0;
        uint8_t* o = img.rgb.data() + (y * img.width + cx) * 3;
        o[0] = cmap->Colors[idx].Red;
        o[1] = cmap->Colors[idx].Green;
        o[2] = cmap->Colors[idx].Blue;
      }
    }
    return img;
  }
}

}  // namespace

RgbImage decode_image(const uint8_t* data, size_t n, const std::string& source, int64_t max_pixels) {
  switch (sniff_format(data, n)) {
    case ImageFormat::kPng: return decode_png(data, n, source, max_pixels);
    case ImageFormat::kJpeg: return decode_jpeg(data, n, source, max_pixels);
    case ImageFormat::kWebp: return decode_webp(data, n, source, max_pixels);
    case ImageFormat::kGif: return decode_gif(data, n, source, max_pixels);
    default:
      if (n == 0) fail(source, ": the image is empty (0 bytes)");
      fail(source, ": not a supported image format (PNG, JPEG, WebP or GIF expected; the first bytes match none)");
  }
}

RgbImage decode_image(const std::vector<uint8_t>& bytes, const std::string& source, int64_t max_pixels) {
  return decode_image(bytes.data(), bytes.size(), source, max_pixels);
}

RgbImage load_image_file(const std::string& path, int64_t max_pixels, int64_t max_file_bytes) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) fail(path, ": cannot open the image file");
  const std::streamoff size = f.tellg();
  if (size < 0) fail(path, ": cannot read the image file");
  if (size > max_file_bytes) fail(path, ": the image file is ", size, " bytes, over the limit of ", max_file_bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  f.seekg(0);
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size)) fail(path, ": cannot read the image file");
  return decode_image(bytes, path, max_pixels);
}

}  // namespace qinfer::vision
