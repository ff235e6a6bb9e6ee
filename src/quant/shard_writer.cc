#include "quant/shard_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qinfer::quant {

namespace fs = std::filesystem;

ShardWriter::ShardWriter(std::string dir, int64_t shard_bytes) : dir_(std::move(dir)), shard_bytes_(shard_bytes) {}

void ShardWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
  cur_bytes_ += static_cast<int64_t>(bytes.size());
  cur_.add(name, dtype, std::move(shape), std::move(bytes));
  cur_names_.push_back(name);
  cur_empty_ = false;
}

void ShardWriter::add_copy(const TensorInfo& t) {
  const TensorInfo* src = &t;
  cur_.add_lazy(t.name, t.dtype, t.shape, [src](uint8_t* dst, size_t n) { src->read_bytes(0, n, dst); });
  cur_bytes_ += static_cast<int64_t>(t.nbytes);
  cur_names_.push_back(t.name);
  cur_empty_ = false;
}

void ShardWriter::flush_if_full() {
  if (!cur_empty_ && cur_bytes_ >= shard_bytes_) write_shard();
}

void ShardWriter::write_shard() {
  const std::string path = dir_ + "/shard-" + std::to_string(shard_files_.size()) + ".partial";
  cur_.add_metadata("format", "pt");
  cur_.write(path);
  for (const auto& n : cur_names_) names_.emplace_back(n, shard_files_.size());
  shard_files_.push_back(path);
  total_ += cur_bytes_;
  cur_ = SafetensorsWriter();
  cur_names_.clear();
  cur_bytes_ = 0;
  cur_empty_ = true;
}

int64_t ShardWriter::finish() {
  if (!cur_empty_ || shard_files_.empty()) write_shard();
  const size_t n = shard_files_.size();
  std::vector<std::string> final_names;
  for (size_t i = 0; i < n; ++i) {
    char buf[64];
    if (n == 1) std::snprintf(buf, sizeof buf, "model.safetensors");
    else std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    final_names.push_back(buf);
    std::error_code ec;
    fs::rename(shard_files_[i], dir_ + "/" + buf, ec);
    if (ec) fail(dir_, "/", buf, ": cannot rename the written shard: ", ec.message());
  }
  if (n > 1) {
    nlohmann::ordered_json idx;
    idx["metadata"] = {{"total_size", total_}};
    nlohmann::json map = nlohmann::json::object();   // sorted by tensor name
    for (const auto& [name, s] : names_) map[name] = final_names[s];
    idx["weight_map"] = map;
    const std::string path = dir_ + "/model.safetensors.index.json";
    std::ofstream out(path, std::ios::binary);
    out << idx.dump(2) << "\n";
    out.close();
    if (!out) fail(path, ": write failed");
  }
  return total_;
}

}  // namespace qinfer::quant
