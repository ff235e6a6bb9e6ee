// Writes a checkpoint's tensors as safetensors shards of about shard_bytes each,
// in the order they are added: model-00001-of-0000N.safetensors + the
// model.safetensors.index.json weight map (a single model.safetensors when it
// all fits one shard). Tensors are either owned bytes (quantized modules) or
// copied from a source checkpoint while the shard is written, so memory holds
// at most one shard's owned tensors. Shards are written under provisional names
// and renamed once their count is known; any write error (full disk, file-size
// limit) is an Error naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qinfer::quant {

class ShardWriter {
 public:
  ShardWriter(std::string dir, int64_t shard_bytes);
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  void add_copy(const TensorInfo& t);          // the bytes of t, read when its shard is written
  void flush_if_full();                        // write the current shard once it reached shard_bytes
  // Writes the last shard, renames all to their final names and writes the index.
  // Returns the total tensor bytes.
  int64_t finish();
  size_t tensors() const { return names_.size(); }

 private:
  void write_shard();
  std::string dir_;
  int64_t shard_bytes_;
  SafetensorsWriter cur_;
  int64_t cur_bytes_ = 0;
  bool cur_empty_ = true;
  std::vector<std::string> shard_files_;                 // provisional names
  std::vector<std::pair<std::string, size_t>> names_;    // tensor -> shard index
  std::vector<std::string> cur_names_;
  int64_t total_ = 0;
};

}  // namespace qinfer::quant
