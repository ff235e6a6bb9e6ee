// --image FILE (repeatable) for generate, logits and chat: each file decoded and
// preprocessed with the model folder's preprocessor_config.json (the real defaults
// when it is absent). Errors name the file.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "vision/preprocess.h"

namespace qinfer::cli {

using ImageList = std::shared_ptr<const std::vector<vision::ImagePatches>>;

// Null when `files` is empty.
ImageList load_images(const std::vector<std::string>& files, const std::string& model_dir);

// The chat message content for `text` with `n_images` image parts before it (the
// shape the chat template renders as <|vision_start|><|image_pad|><|vision_end|>).
std::string image_placeholders(size_t n_images);

}  // namespace qinfer::cli
