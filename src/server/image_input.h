// The images of a chat request: each image part's URL turned into preprocessed patches
// for the engine (GenParams::images), the way vLLM's MediaConnector fetches them:
//   data:<mime>;base64,<data>   decoded in memory;
//   http:// and https://         fetched by the server (timeout, byte limit, redirects followed);
//   file://<absolute path>       only under --allowed-local-media-path DIR (the resolved path,
//                                symlinks followed, must lie inside DIR).
// Every failure (bad base64, an unknown scheme, a fetch error or timeout, too many bytes, a
// disallowed file, an undecodable or too large image) is an ApiError 400 naming the part's
// field, e.g. "messages[0].content[1].image_url".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vision/preprocess.h"

namespace qinfer::server {

// One image part of a request, in prompt order.
struct ImageRef {
  std::string field;   // "messages[0].content[1].image_url"
  std::string url;
};

struct MediaOptions {
  std::string allowed_local_media_path;     // --allowed-local-media-path; empty: file:// refused
  double fetch_timeout_s = 5;               // VLLM_IMAGE_FETCH_TIMEOUT's default
  int64_t max_image_bytes = int64_t{20} << 20;   // an encoded image larger than this is refused
  int64_t max_pixels = vision::kDefaultMaxImagePixels;  // declared size, checked before decoding
};

// Strict standard base64 (RFC 4648 alphabet, '=' padding optional at the end); ASCII
// whitespace is skipped. Returns false on any other character or a bad length.
bool base64_decode(const std::string& in, std::vector<uint8_t>& out);

// The encoded bytes an image URL points at (see above). Throws ApiError 400 naming `field`.
std::vector<uint8_t> fetch_image_bytes(const std::string& url, const std::string& field, const MediaOptions& opts);

// Every image fetched, decoded and preprocessed with `cfg`, in order. Null when `refs` is empty.
std::shared_ptr<const std::vector<vision::ImagePatches>> load_request_images(const std::vector<ImageRef>& refs,
                                                                             const vision::ProcessorConfig& cfg,
                                                                             const MediaOptions& opts);

}  // namespace qinfer::server
