// Reading and writing safetensors files. Reading maps the file (mmap) and
// validates the header strictly: JSON well-formed, every dtype known, shape ×
// dtype size == byte length, offsets inside the file, no two tensors overlapping.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/dtype.h"

namespace qinfer {

class MappedFile;

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;   // into the mapped file
  size_t nbytes = 0;
  std::string file;                // path of the file holding it (for error messages)
  const MappedFile* source = nullptr;   // the mapped file (for read_bytes); null for tensors made in memory

  int64_t numel() const;
  std::string shape_str() const;   // "[248320, 2048]"
  // Error "<file>: tensor <name>: expected shape [..] but the file has [..]" on mismatch.
  void expect_shape(const std::vector<int64_t>& want) const;
  void expect_dtype(std::initializer_list<DType> allowed) const;
  // Copies bytes [offset, offset + n) of the tensor into dst with a read from the
  // file, not through the mapping: touching a mapped page can map a whole large
  // page-cache folio (2 MiB on Linux 6.16+ ext4), so reading single embedding rows
  // through the mapping made the whole table resident. Error naming file and tensor.
  void read_bytes(size_t offset, size_t n, void* dst) const;
};

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // Error naming the path on failure
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // pread of n bytes at file offset `offset` (retried on short reads); Error naming the path.
  void read_at(size_t offset, size_t n, void* dst) const;
 private:
  std::string path_;
  int fd_ = -1;   // kept open for read_at
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return file_->path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t file_size() const { return file_->size(); }
 private:
  std::unique_ptr<MappedFile> file_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors in safetensors format (header sorted by name, data 8-byte aligned).
class SafetensorsWriter {
 public:
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  // A tensor whose bytes are produced only while writing (fill gets a buffer of the
  // tensor's size), so multi-GB checkpoints are written without holding them in memory.
  using Fill = std::function<void(uint8_t* dst, size_t nbytes)>;
  void add_lazy(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill);
  void add_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  size_t total_bytes() const;
  void write(const std::string& path) const;  // Error naming the path on failure
 private:
  struct Entry { DType dtype; std::vector<int64_t> shape; std::vector<uint8_t> bytes; Fill fill; size_t nbytes; };
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace qinfer
