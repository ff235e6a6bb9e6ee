#include "quant/activation_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace qinfer::quant {

ActivationStore::ActivationStore(int64_t hidden, size_t memory_budget, std::string spill_path)
    : hidden_(hidden), budget_(memory_budget), spill_path_(std::move(spill_path)) {}

ActivationStore::~ActivationStore() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(spill_path_.c_str());
  }
}

void ActivationStore::clear() {
  entries_.clear();
  mem_used_ = file_used_ = 0;
  if (fd_ >= 0 && ::ftruncate(fd_, 0) != 0) fail(spill_path_, ": cannot truncate: ", std::strerror(errno));
}

void ActivationStore::open_spill() {
  if (fd_ >= 0) return;
  fd_ = ::open(spill_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) fail(spill_path_, ": cannot create the activation spill file: ", std::strerror(errno));
}

void ActivationStore::begin_sample(int64_t rows) {
  Entry e;
  e.rows = rows;
  const size_t bytes = static_cast<size_t>(rows * hidden_) * sizeof(float);
  if (mem_used_ + bytes <= budget_) {
    e.data.resize(static_cast<size_t>(rows * hidden_));
    mem_used_ += bytes;
  } else {
    open_spill();
    e.in_memory = false;
    e.offset = file_used_;
    file_used_ += bytes;
  }
  entries_.push_back(std::move(e));
}

void ActivationStore::append(const float* x, int64_t rows) {
  if (entries_.empty()) fail("ActivationStore::append before begin_sample");
  Entry& e = entries_.back();
  if (e.filled + rows > e.rows) fail("ActivationStore::append: more rows than the sample has");
  const size_t n = static_cast<size_t>(rows * hidden_) * sizeof(float);
  if (e.in_memory) {
    std::memcpy(e.data.data() + e.filled * hidden_, x, n);
  } else {
    const auto* p = reinterpret_cast<const uint8_t*>(x);
    size_t done = 0;
    const size_t off = e.offset + static_cast<size_t>(e.filled * hidden_) * sizeof(float);
    while (done < n) {
      const ssize_t w = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(off + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(spill_path_, ": writing calibration activations failed: ", w < 0 ? std::strerror(errno) : "disk full");
      done += static_cast<size_t>(w);
    }
  }
  e.filled += rows;
}

void ActivationStore::read(size_t s, int64_t row0, int64_t n, float* dst) const {
  const Entry& e = entries_.at(s);
  if (row0 < 0 || row0 + n > e.filled) fail("ActivationStore::read: rows outside the sample");
  const size_t bytes = static_cast<size_t>(n * hidden_) * sizeof(float);
  if (e.in_memory) {
    std::memcpy(dst, e.data.data() + row0 * hidden_, bytes);
    return;
  }
  auto* p = reinterpret_cast<uint8_t*>(dst);
  const size_t off = e.offset + static_cast<size_t>(row0 * hidden_) * sizeof(float);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail(spill_path_, ": reading calibration activations failed: ", r < 0 ? std::strerror(errno) : "short file");
    done += static_cast<size_t>(r);
  }
}

}  // namespace qinfer::quant
