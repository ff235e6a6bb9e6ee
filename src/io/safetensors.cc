#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void TensorInfo::expect_shape(const std::vector<int64_t>& want) const {
  if (shape == want) return;
  TensorInfo w;
  w.shape = want;
  fail(file, ": tensor ", name, ": expected shape ", w.shape_str(), " but the file has ", shape_str());
}

void TensorInfo::expect_dtype(std::initializer_list<DType> allowed) const {
  std::string names;
  for (DType t : allowed) {
    if (t == dtype) return;
    names += std::string(names.empty() ? "" : " or ") + dtype_name(t);
  }
  fail(file, ": tensor ", name, ": dtype ", dtype_name(dtype), " is not supported here (expected ", names, ")");
}

void TensorInfo::read_bytes(size_t offset, size_t n, void* dst) const {
  if (offset > nbytes || n > nbytes - offset)
    fail(file, ": tensor ", name, ": read of bytes [", offset, ", ", offset + n, ") is outside its ", nbytes, " bytes");
  if (!source) {
    std::memcpy(dst, data + offset, n);
    return;
  }
  try {
    source->read_at(static_cast<size_t>(data - source->data()) + offset, n, dst);
  } catch (const Error& e) {
    fail("tensor ", name, ": ", e.what());
  }
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: a FIFO in place of a weight file would block open(); it is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file (a FIFO, device or directory cannot hold weights)");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail(path, ": cannot mmap: ", std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  fd_ = fd;
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read_at(size_t offset, size_t n, void* dst) const {
  if (offset > size_ || n > size_ - offset)
    fail(path_, ": read of ", n, " bytes at offset ", offset, " runs past the end of the file (", size_, " bytes)");
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      fail(path_, ": read of ", n, " bytes at offset ", offset, " failed: ", got < 0 ? std::strerror(errno) : "end of file (was the file truncated after loading?)");
    out += got;
    offset += static_cast<size_t>(got);
    n -= static_cast<size_t>(got);
  }
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(std::make_unique<MappedFile>(path)) {
  const uint8_t* base = file_->data();
  const size_t size = file_->size();
  if (size < 8) fail(path, ": truncated safetensors file (", size, " bytes, no header length)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian on every platform we build for
  if (header_len > size - 8) fail(path, ": header length ", header_len, " runs past the end of the file (", size, " bytes)");
  if (header_len > (100u << 20)) fail(path, ": header length ", header_len, " is implausibly large");
  nlohmann::json header;
  try {
    header = parse_json(std::string_view(reinterpret_cast<const char*>(base + 8), header_len), path);
  } catch (const JsonError& e) {
    fail(e.too_deep() ? "" : "malformed safetensors header: ", e.what());
  }
  if (!header.is_object()) fail(path, ": safetensors header is not a JSON object");
  const size_t data_start = 8 + header_len;
  const size_t data_size = size - data_start;
  struct Span { size_t begin, end; const std::string* name; };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (it->is_object())
        for (auto m = it->begin(); m != it->end(); ++m)
          if (m->is_string()) metadata_[m.key()] = m->get<std::string>();
      continue;
    }
    const auto& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      fail(path, ": tensor ", name, ": header entry needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    t.file = path;
    t.source = file_.get();
    if (!e["dtype"].is_string() || !parse_dtype(e["dtype"].get<std::string>(), &t.dtype))
      fail(path, ": tensor ", name, ": unknown dtype ", e["dtype"].dump());
    if (!e["shape"].is_array()) fail(path, ": tensor ", name, ": shape is not an array");
    uint64_t numel = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) fail(path, ": tensor ", name, ": bad shape ", e["shape"].dump());
      int64_t v = d.get<int64_t>();
      if (v > 0 && numel > (uint64_t{1} << 62) / static_cast<uint64_t>(v)) fail(path, ": tensor ", name, ": shape overflows");
      numel *= static_cast<uint64_t>(v);
      t.shape.push_back(v);
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(path, ": tensor ", name, ": data_offsets must be two non-negative integers");
    uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en) fail(path, ": tensor ", name, ": data_offsets [", b, ", ", en, "] are reversed");
    if (en > data_size)
      fail(path, ": tensor ", name, ": data_offsets [", b, ", ", en, "] run past the end of the data (",
           data_size, " bytes; file truncated?)");
    t.nbytes = en - b;
    if (numel * dtype_size(t.dtype) != t.nbytes)
      fail(path, ": tensor ", name, ": ", dtype_name(t.dtype), " ", t.shape_str(), " needs ",
           numel * dtype_size(t.dtype), " bytes but data_offsets give ", t.nbytes);
    t.data = base + data_start + b;
    tensors_.push_back(std::move(t));
  }
  for (const auto& t : tensors_) {
    size_t b = static_cast<size_t>(t.data - (base + data_start));
    if (t.nbytes) spans.push_back({b, b + t.nbytes, &t.name});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      fail(path, ": tensors ", *spans[i - 1].name, " and ", *spans[i].name, " overlap in the data section");
}

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (static_cast<size_t>(numel) * dtype_size(dtype) != bytes.size())
    fail("safetensors writer: tensor ", name, ": ", bytes.size(), " bytes do not match its shape");
  size_t n = bytes.size();
  entries_[name] = Entry{dtype, std::move(shape), std::move(bytes), nullptr, n};
}

void SafetensorsWriter::add_lazy(const std::string& name, DType dtype, std::vector<int64_t> shape, Fill fill) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  size_t n = static_cast<size_t>(numel) * dtype_size(dtype);
  entries_[name] = Entry{dtype, std::move(shape), {}, std::move(fill), n};
}

size_t SafetensorsWriter::total_bytes() const {
  size_t n = 0;
  for (const auto& [k, e] : entries_) n += e.nbytes;
  return n;
}

void SafetensorsWriter::write(const std::string& path) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  size_t off = 0;
  for (const auto& [name, e] : entries_) {
    header[name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"data_offsets", {off, off + e.nbytes}}};
    off += e.nbytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8) h += ' ';
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, ": cannot create: ", std::strerror(errno));
  uint64_t len = h.size();
  bool ok = std::fwrite(&len, 8, 1, f) == 1 && std::fwrite(h.data(), 1, h.size(), f) == h.size();
  std::vector<uint8_t> buf;
  for (const auto& [name, e] : entries_) {
    const std::vector<uint8_t>* src = &e.bytes;
    if (e.fill) {
      buf.assign(e.nbytes, 0);
      e.fill(buf.data(), e.nbytes);
      src = &buf;
    }
    ok = ok && (src->empty() || std::fwrite(src->data(), 1, src->size(), f) == src->size());
  }
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) err = errno, ok = false;
  if (!ok) fail(path, ": write failed: ", err ? std::strerror(err) : "short write");
}

}  // namespace qinfer
