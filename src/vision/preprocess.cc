#include "vision/preprocess.h"

#include <algorithm>
#include <cfenv>
#include <cmath>

#include "util/error.h"

namespace qinfer::vision {

std::pair<int64_t, int64_t> smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                         int64_t max_pixels, const std::string& source) {
  if (height < 1 || width < 1) fail(source, ": image has an empty size ", height, "x", width);
  const double H = static_cast<double>(height), W = static_cast<double>(width), f = static_cast<double>(factor);
  const double ratio = std::max(H, W) / std::min(H, W);
  if (ratio > 200.0)
    fail(source, ": absolute aspect ratio must be smaller than 200, got ", ratio, " (", height, "x", width, ")");
  // Python round(): half to even, which nearbyint gives in the default rounding mode.
  int64_t h = static_cast<int64_t>(std::nearbyint(H / f)) * factor;
  int64_t w = static_cast<int64_t>(std::nearbyint(W / f)) * factor;
  if (h * w > max_pixels) {
    const double beta = std::sqrt(H * W / static_cast<double>(max_pixels));
    h = std::max(factor, static_cast<int64_t>(std::floor(H / beta / f)) * factor);
    w = std::max(factor, static_cast<int64_t>(std::floor(W / beta / f)) * factor);
  } else if (h * w < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (H * W));
    h = static_cast<int64_t>(std::ceil(H * beta / f)) * factor;
    w = static_cast<int64_t>(std::ceil(W * beta / f)) * factor;
  }
  return {h, w};
}

namespace {

double keys_cubic(double x) {
  const double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

// One axis: per output index the first source index, the tap count and int16 weights.
struct AxisWeights {
  std::vector<int64_t> xmin, xsize;
  std::vector<int32_t> w;   // [out][kmax]
  int64_t kmax = 0;
  int bits = 0;
};

AxisWeights axis_weights(int64_t in, int64_t out) {
  AxisWeights a;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  a.kmax = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  a.xmin.resize(out);
  a.xsize.resize(out);
  std::vector<double> wf(out * a.kmax, 0.0);
  double wt_max = 0.0;
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    int64_t xsize = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - xmin;
    xsize = std::min(std::max<int64_t>(xsize, 0), a.kmax);
    double* ws = wf.data() + i * a.kmax;
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      ws[j] = keys_cubic((static_cast<double>(j + xmin) - center + 0.5) * invscale);
      total += ws[j];
    }
    if (total != 0.0)
      for (int64_t j = 0; j < xsize; ++j) {
        ws[j] /= total;
        wt_max = std::max(wt_max, ws[j]);
      }
    a.xmin[i] = xmin;
    a.xsize[i] = xsize;
  }
  int bits = 0;
  while (bits < 22) {
    if (static_cast<int64_t>(0.5 + wt_max * static_cast<double>(int64_t(1) << (bits + 1))) >= (1 << 15)) break;
    ++bits;
  }
  a.bits = bits;
  a.w.resize(out * a.kmax);
  const double one = static_cast<double>(int64_t(1) << bits);
  for (size_t k = 0; k < wf.size(); ++k) {
    const double v = wf[k] * one;
    a.w[k] = static_cast<int32_t>(v < 0 ? std::trunc(-0.5 + v) : std::trunc(0.5 + v));
  }
  return a;
}

uint8_t clamp_u8(int64_t acc, int bits) {
  const int64_t v = (acc + (int64_t(1) << (bits - 1))) >> bits;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

RgbImage resize_width(const RgbImage& in, int64_t out_w) {
  const AxisWeights a = axis_weights(in.width, out_w);
  RgbImage o;
  o.height = in.height;
  o.width = out_w;
  o.rgb.resize(o.height * out_w * 3);
  for (int64_t y = 0; y < in.height; ++y) {
    const uint8_t* src = in.rgb.data() + y * in.width * 3;
    uint8_t* dst = o.rgb.data() + y * out_w * 3;
    for (int64_t i = 0; i < out_w; ++i) {
      const int32_t* w = a.w.data() + i * a.kmax;
      int64_t acc[3] = {0, 0, 0};
      for (int64_t j = 0; j < a.xsize[i]; ++j) {
        const uint8_t* p = src + (a.xmin[i] + j) * 3;
        for (int c = 0; c < 3; ++c) acc[c] += static_cast<int64_t>(p[c]) * w[j];
      }
      for (int c = 0; c < 3; ++c) dst[i * 3 + c] = clamp_u8(acc[c], a.bits);
    }
  }
  return o;
}

RgbImage resize_height(const RgbImage& in, int64_t out_h) {
  const AxisWeights a = axis_weights(in.height, out_h);
  RgbImage o;
  o.height = out_h;
  o.width = in.width;
  const int64_t row = in.width * 3;
  o.rgb.resize(out_h * row);
  std::vector<int64_t> acc(row);
  for (int64_t i = 0; i < out_h; ++i) {
    std::fill(acc.begin(), acc.end(), 0);
    const int32_t* w = a.w.data() + i * a.kmax;
    for (int64_t j = 0; j < a.xsize[i]; ++j) {
      const uint8_t* src = in.rgb.data() + (a.xmin[i] + j) * row;
      const int64_t wj = w[j];
      for (int64_t x = 0; x < row; ++x) acc[x] += src[x] * wj;
    }
    uint8_t* dst = o.rgb.data() + i * row;
    for (int64_t x = 0; x < row; ++x) dst[x] = clamp_u8(acc[x], a.bits);
  }
  return o;
}

}  // namespace

RgbImage resize_bicubic_aa(const RgbImage& in, int64_t out_h, int64_t out_w) {
  if (in.height == out_h && in.width == out_w) return in;
  RgbImage cur = in.width != out_w ? resize_width(in, out_w) : in;
  if (cur.height != out_h) cur = resize_height(cur, out_h);
  return cur;
}

RgbImage resize_for_model(const RgbImage& img, const ProcessorConfig& cfg, const std::string& source) {
  if (img.height < 1 || img.width < 1 || img.rgb.size() != static_cast<size_t>(img.height * img.width * 3))
    fail(source, ": empty or malformed RGB image");
  if (!cfg.do_resize) {
    if (img.height % cfg.factor() || img.width % cfg.factor())
      fail(source, ": do_resize is off but the image size ", img.height, "x", img.width, " is not a multiple of ",
           cfg.factor());
    return img;
  }
  auto [h, w] = smart_resize(img.height, img.width, cfg.factor(), cfg.min_pixels, cfg.max_pixels, source);
  return resize_bicubic_aa(img, h, w);
}

ImagePatches preprocess_image(const RgbImage& img, const ProcessorConfig& cfg, const std::string& source) {
  const RgbImage r = resize_for_model(img, cfg, source);
  const int64_t P = cfg.patch_size, T = cfg.temporal_patch_size, M = cfg.merge_size;
  ImagePatches out;
  out.resized_h = r.height;
  out.resized_w = r.width;
  out.grid_t = 1;
  out.grid_h = r.height / P;
  out.grid_w = r.width / P;
  // Fused rescale + normalize (TorchvisionBackend._rescale_and_normalize), float32.
  float mean[3], stdv[3], mul = 1.0f;
  for (int c = 0; c < 3; ++c) {
    mean[c] = 0.f;
    stdv[c] = 1.f;
    if (cfg.do_rescale && cfg.do_normalize) {
      const float inv = static_cast<float>(1.0 / cfg.rescale_factor);
      mean[c] = cfg.image_mean[c] * inv;
      stdv[c] = cfg.image_std[c] * inv;
    } else if (cfg.do_normalize) {
      mean[c] = cfg.image_mean[c];
      stdv[c] = cfg.image_std[c];
    } else if (cfg.do_rescale) {
      mul = static_cast<float>(cfg.rescale_factor);
    }
  }
  float lut[3][256];
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v)
      lut[c][v] = (cfg.do_normalize ? (static_cast<float>(v) - mean[c]) / stdv[c] : static_cast<float>(v) * mul);
  const int64_t row_len = 3 * T * P * P;
  out.pixel_values.resize(out.patches() * row_len);
  const int64_t bw = out.grid_w / M;
  int64_t k = 0;
  for (int64_t br = 0; br < out.grid_h / M; ++br)
    for (int64_t bc = 0; bc < bw; ++bc)
      for (int64_t ir = 0; ir < M; ++ir)
        for (int64_t ic = 0; ic < M; ++ic, ++k) {
          const int64_t row = br * M + ir, col = bc * M + ic;
          float* dst = out.pixel_values.data() + k * row_len;
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t y = 0; y < P; ++y) {
                const uint8_t* src = r.rgb.data() + ((row * P + y) * r.width + col * P) * 3 + c;
                float* d = dst + ((c * T + t) * P + y) * P;
                for (int64_t x = 0; x < P; ++x) d[x] = lut[c][src[x * 3]];
              }
        }
  return out;
}

}  // namespace qinfer::vision
