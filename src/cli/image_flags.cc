#include "cli/image_flags.h"

#include "util/log.h"
#include "vision/image_decode.h"
#include "vision/vision_config.h"

namespace qinfer::cli {

ImageList load_images(const std::vector<std::string>& files, const std::string& model_dir) {
  if (files.empty()) return nullptr;
  const vision::ProcessorConfig pc = vision::load_processor_config(model_dir);
  auto out = std::make_shared<std::vector<vision::ImagePatches>>();
  for (const auto& f : files) {
    out->push_back(vision::preprocess_image(vision::load_image_file(f), pc, f));
    const auto& p = out->back();
    log_info(f, ": resized to ", p.resized_w, "x", p.resized_h, ", ", p.merged_tokens(pc.merge_size),
             " image tokens");
  }
  return out;
}

std::string image_placeholders(size_t n_images) {
  std::string s;
  for (size_t i = 0; i < n_images; ++i) s += "<|vision_start|><|image_pad|><|vision_end|>";
  return s;
}

}  // namespace qinfer::cli
