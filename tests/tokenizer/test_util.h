// Shared helpers for the tokenizer tests.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace qinfer::test {

// The Qwen3.5 tokenizer files ship in the repository (assets/, byte-identical to shared/).
inline std::string qwen35_dir() { return QINFER_SOURCE_DIR "/assets/tokenizer/qwen3.5"; }

// A file under tests/data/ (test data committed with the repository).
inline std::string data_file(const std::string& rel) { return QINFER_SOURCE_DIR "/tests/data/" + rel; }

// A file under the optional shared/ reference folder, or "" when it is absent (the caller skips).
inline std::string shared_file(const std::string& rel) {
  const std::string p = QINFER_SHARED_DIR "/" + rel;
  return std::filesystem::exists(p) ? p : std::string();
}

// The real Qwen3.5 tokenizer, loaded once per test process.
inline const Tokenizer& qwen35() {
  static const Tokenizer t = Tokenizer::load(qwen35_dir());
  return t;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read test data file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

// A fresh empty directory under the system temp dir, removed when this object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() /
            ("qinfer_tok_" + name + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace qinfer::test
