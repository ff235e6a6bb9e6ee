// Helpers shared by the libFuzzer targets (fuzz/*.cc, built with -DQINFER_FUZZ=ON).
// A target calls the code under test on the input and lets through only the errors the
// code documents (qinfer::Error and its subclasses, server::ApiError); anything else that
// escapes (std::out_of_range, nlohmann::json exceptions, bad_alloc, ...) or a sanitizer
// report is a finding.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::fuzz {

// One scratch folder per fuzzing process (removed at exit), for the loaders that read files.
// The string is never destroyed: the atexit handler, registered while it is being built,
// runs after static destructors of that object would have (a use-after-free otherwise).
inline const std::string& scratch_dir() {
  static const std::string* dir = [] {
    auto* d = new std::string((std::filesystem::temp_directory_path() / ("qinfer-fuzz-" + std::to_string(getpid()))).string());
    std::filesystem::create_directories(*d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(*dir, ec); });
    return d;
  }();
  return *dir;
}

inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at the first occurrence of `sep` (the second part empty when absent).
inline std::pair<std::string_view, std::string_view> split_at(std::string_view s, std::string_view sep) {
  const size_t p = s.find(sep);
  if (p == std::string_view::npos) return {s, {}};
  return {s.substr(0, p), s.substr(p + sep.size())};
}

// Deterministic cut points for streaming the text in pieces, derived from `seed`.
inline std::vector<size_t> cuts_from(uint64_t seed, size_t size) {
  std::vector<size_t> cuts;
  if (size == 0) return cuts;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  const size_t n = 1 + next() % std::min<size_t>(size, 16);
  for (size_t i = 0; i < n; ++i) cuts.push_back(next() % (size + 1));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

}  // namespace qinfer::fuzz
