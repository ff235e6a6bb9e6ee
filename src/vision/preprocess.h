// Image preprocessing of Qwen2VLImageProcessor (torchvision backend, the
// transformers default), bit-exact to transformers on CPU:
//   smart_resize -> uint8 antialiased bicubic resize (PyTorch's native uint8
//   kernel: int16 weights, width pass then height pass, uint8 intermediate)
//   -> fused rescale+normalize in float32 -> patchify in merge-block order.
// See tests/fixtures/vision/FORMAT.md for the exact recipe.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vision/image_decode.h"
#include "vision/vision_config.h"

namespace qinfer::vision {

// transformers smart_resize: (height, width) multiples of `factor` with the pixel
// count inside [min_pixels, max_pixels]; Python's round (half to even). Error
// (naming `source`) when the aspect ratio is over 200.
std::pair<int64_t, int64_t> smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                         int64_t max_pixels, const std::string& source = "image");

// Antialiased bicubic (Keys a = -0.5) uint8 resize as PyTorch's CPU kernel does it.
RgbImage resize_bicubic_aa(const RgbImage& in, int64_t out_h, int64_t out_w);

// One image's patches: rows [t*h*w][C*T*P*P] in merge-block order, each row (c, t, y, x).
struct ImagePatches {
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;     // patch grid
  int64_t resized_h = 0, resized_w = 0;
  std::vector<float> pixel_values;
  int64_t patches() const { return grid_t * grid_h * grid_w; }
  int64_t merged_tokens(int merge) const { return patches() / (int64_t(merge) * merge); }
};

ImagePatches preprocess_image(const RgbImage& img, const ProcessorConfig& cfg, const std::string& source = "image");
// The resized uint8 image alone (what preprocess_image normalizes), for tests.
RgbImage resize_for_model(const RgbImage& img, const ProcessorConfig& cfg, const std::string& source = "image");

}  // namespace qinfer::vision
