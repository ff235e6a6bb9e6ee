#include "server/image_input.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <httplib.h>

#include "server/api_error.h"
#include "util/error.h"
#include "util/log.h"
#include "vision/image_decode.h"

namespace qinfer::server {

namespace fs = std::filesystem;

namespace {

// A URL shown in a message: data URLs and very long ones are cut.
std::string shown_url(const std::string& url) {
  if (url.rfind("data:", 0) == 0) return url.substr(0, std::min<size_t>(url.find(','), 48)) + ",...";
  return url.size() > 200 ? url.substr(0, 200) + "..." : url;
}

std::string mib(int64_t bytes) { return cat(static_cast<double>(bytes) / double(1 << 20), " MiB"); }

int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::vector<uint8_t> from_data_url(const std::string& url, const std::string& field, const MediaOptions& opts) {
  size_t comma = url.find(',');
  if (comma == std::string::npos) bad_request(field, cat(field, ": the data URL has no ',' before its data"));
  std::string header = url.substr(5, comma - 5);   // after "data:"
  size_t semi = header.rfind(';');
  if (semi == std::string::npos || header.substr(semi + 1) != "base64") {
    bad_request(field, cat(field, ": only base64 data URLs are supported (data:image/png;base64,...), got '",
                           shown_url(url), "'"));
  }
  std::string media = header.substr(0, semi);
  if (!media.empty() && media.rfind("image/", 0) != 0) {
    bad_request(field, cat(field, ": the data URL's media type '", media, "' is not an image type"));
  }
  if (static_cast<double>(url.size() - comma - 1) * 0.75 > static_cast<double>(opts.max_image_bytes) + 3) {
    bad_request(field, cat(field, ": the image is larger than the limit of ", mib(opts.max_image_bytes)));
  }
  std::vector<uint8_t> bytes;
  if (!base64_decode(url.substr(comma + 1), bytes)) {
    bad_request(field, cat(field, ": the data URL's data is not valid base64"));
  }
  if (bytes.empty()) bad_request(field, cat(field, ": the data URL holds no data"));
  return bytes;
}

std::string percent_decode(const std::string& s, const std::string& field) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = i + 2 < s.size() ? hex(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad_request(field, cat(field, ": bad percent escape in the file URL"));
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (out.find('\0') != std::string::npos) bad_request(field, cat(field, ": the file URL holds a NUL byte"));
  return out;
}

std::vector<uint8_t> from_file_url(const std::string& url, const std::string& field, const MediaOptions& opts) {
  if (opts.allowed_local_media_path.empty()) {
    bad_request(field, cat(field, ": file:// URLs are refused; start the server with --allowed-local-media-path "
                           "DIR to allow images from DIR"));
  }
  std::string rest = url.substr(7);   // after "file://"
  if (rest.rfind("localhost/", 0) == 0) rest = rest.substr(9);
  if (rest.empty() || rest[0] != '/') {
    bad_request(field, cat(field, ": a file URL needs an absolute path (file:///dir/image.png), got '",
                           shown_url(url), "'"));
  }
  const fs::path requested(percent_decode(rest, field));
  std::error_code ec;
  const fs::path dir = fs::canonical(opts.allowed_local_media_path, ec);
  if (ec) bad_request(field, cat(field, ": --allowed-local-media-path '", opts.allowed_local_media_path,
                                 "' cannot be resolved: ", ec.message()));
  const fs::path real = fs::canonical(requested, ec);
  // Not found and outside give the same answer for paths outside DIR: no probing of the file system.
  const fs::path rel = ec ? fs::path() : real.lexically_relative(dir);
  const bool inside = !ec && !rel.empty() && *rel.begin() != ".." && rel != ".";
  if (!inside) {
    if (ec && requested.lexically_normal().string().rfind(dir.string() + "/", 0) == 0) {
      bad_request(field, cat(field, ": ", requested.string(), ": no such file"));
    }
    bad_request(field, cat(field, ": the file path ", requested.string(),
                           " must be a subpath of --allowed-local-media-path ", dir.string()));
  }
  if (!fs::is_regular_file(real, ec)) bad_request(field, cat(field, ": ", requested.string(), " is not a regular file"));
  const auto size = fs::file_size(real, ec);
  if (ec) bad_request(field, cat(field, ": ", requested.string(), ": cannot read: ", ec.message()));
  if (static_cast<int64_t>(size) > opts.max_image_bytes) {
    bad_request(field, cat(field, ": ", requested.string(), " is larger than the limit of ", mib(opts.max_image_bytes)));
  }
  std::ifstream in(real, std::ios::binary);
  std::vector<uint8_t> bytes(size);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
    bad_request(field, cat(field, ": ", requested.string(), ": cannot read"));
  }
  return bytes;
}

std::vector<uint8_t> from_http_url(const std::string& url, const std::string& field, const MediaOptions& opts) {
  const size_t host_begin = url.find("://") + 3;
  const size_t path_begin = url.find('/', host_begin);
  const std::string base = url.substr(0, path_begin);
  const std::string path = path_begin == std::string::npos ? "/" : url.substr(path_begin);
  if (base.size() <= host_begin) bad_request(field, cat(field, ": the URL '", shown_url(url), "' has no host"));
  httplib::Client cli(base);
  if (!cli.is_valid()) bad_request(field, cat(field, ": cannot fetch '", shown_url(url), "': not a valid URL"));
  const double t = opts.fetch_timeout_s;
  const time_t sec = static_cast<time_t>(t);
  const time_t usec = static_cast<time_t>((t - std::floor(t)) * 1e6);
  cli.set_connection_timeout(sec, usec);
  cli.set_read_timeout(sec, usec);
  cli.set_write_timeout(sec, usec);
  cli.set_follow_location(true);
  const double deadline = now_seconds() + t;
  std::string body;
  bool too_big = false, too_slow = false;
  auto on_response = [&](const httplib::Response& r) {
    if (r.has_header("Content-Length")) {
      const std::string len = r.get_header_value("Content-Length");
      int64_t n = 0;
      for (char c : len) n = (c >= '0' && c <= '9' && n < (int64_t{1} << 50)) ? n * 10 + (c - '0') : n;
      if (n > opts.max_image_bytes) {
        too_big = r.status < 300 || r.status >= 400;
        return !too_big;
      }
    }
    return true;
  };
  auto on_data = [&](const char* d, size_t n) {
    if (static_cast<int64_t>(body.size() + n) > opts.max_image_bytes) return !(too_big = true);
    if (now_seconds() > deadline) return !(too_slow = true);
    body.append(d, n);
    return true;
  };
  httplib::Result res = cli.Get(path, on_response, on_data);
  if (too_big) {
    bad_request(field, cat(field, ": the image at '", shown_url(url), "' is larger than the limit of ",
                           mib(opts.max_image_bytes)));
  }
  if (too_slow || (!res && res.error() == httplib::Error::Read && now_seconds() > deadline - 0.01)) {
    bad_request(field, cat(field, ": fetching '", shown_url(url), "' timed out after ", t, " s"));
  }
  if (!res) {
    bad_request(field, cat(field, ": cannot fetch '", shown_url(url), "': ", httplib::to_string(res.error())));
  }
  if (res->status != 200) {
    bad_request(field, cat(field, ": fetching '", shown_url(url), "' returned HTTP ", res->status));
  }
  if (body.empty()) bad_request(field, cat(field, ": '", shown_url(url), "' returned no data"));
  return std::vector<uint8_t>(body.begin(), body.end());
}

}  // namespace

bool base64_decode(const std::string& in, std::vector<uint8_t>& out) {
  out.clear();
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t digits = 0;
  for (unsigned char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    int v = b64_value(c);
    if (v < 0 || pad > 0) return false;   // not base64, or data after the padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    ++digits;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  if (digits % 4 == 1 || pad > 2) return false;
  if (pad > 0 && (digits + pad) % 4 != 0) return false;
  return true;
}

std::vector<uint8_t> fetch_image_bytes(const std::string& url, const std::string& field, const MediaOptions& opts) {
  auto starts = [&](const char* p) {
    const size_t n = std::char_traits<char>::length(p);
    if (url.size() < n) return false;
    for (size_t i = 0; i < n; ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != p[i]) return false;
    }
    return true;
  };
  if (starts("data:")) return from_data_url(url, field, opts);
  if (starts("http://") || starts("https://")) return from_http_url(url, field, opts);
  if (starts("file://")) return from_file_url(url, field, opts);
  bad_request(field, cat(field, ": unsupported image URL '", shown_url(url),
                         "': expected a data: URL (data:image/png;base64,...), http://, https:// or file://"));
}

std::shared_ptr<const std::vector<vision::ImagePatches>> load_request_images(const std::vector<ImageRef>& refs,
                                                                             const vision::ProcessorConfig& cfg,
                                                                             const MediaOptions& opts) {
  if (refs.empty()) return nullptr;
  auto out = std::make_shared<std::vector<vision::ImagePatches>>();
  for (const auto& r : refs) {
    std::vector<uint8_t> bytes = fetch_image_bytes(r.url, r.field, opts);
    try {
      vision::RgbImage img = vision::decode_image(bytes, r.field, opts.max_pixels);
      out->push_back(vision::preprocess_image(img, cfg, r.field));
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind(r.field, 0) != 0) msg = cat(r.field, ": ", msg);
      bad_request(r.field, msg);
    }
  }
  return out;
}

}  // namespace qinfer::server
