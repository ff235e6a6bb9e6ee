// The hidden states of every calibration sample at one layer boundary, [rows][hidden]
// fp32 per sample. Samples are kept in memory up to a byte budget; the rest go to
// a temporary spill file (created on first need, removed with the store) and are
// read back with pread. Samples are appended in order, each in one or more pieces.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::quant {

class ActivationStore {
 public:
  ActivationStore(int64_t hidden, size_t memory_budget, std::string spill_path);
  ~ActivationStore();
  ActivationStore(const ActivationStore&) = delete;
  ActivationStore& operator=(const ActivationStore&) = delete;

  void clear();                                            // drop everything (the spill file is truncated)
  void begin_sample(int64_t rows);                         // next sample, rows to come
  void append(const float* x, int64_t rows);               // rows of the current sample
  // rows [row0, row0 + n) of sample s into dst[n][hidden].
  void read(size_t s, int64_t row0, int64_t n, float* dst) const;
  size_t samples() const { return entries_.size(); }
  int64_t rows(size_t s) const { return entries_[s].rows; }
  size_t memory_bytes() const { return mem_used_; }
  size_t spilled_bytes() const { return file_used_; }

 private:
  struct Entry {
    int64_t rows = 0, filled = 0;
    bool in_memory = true;
    std::vector<float> data;   // in memory
    size_t offset = 0;         // in the spill file
  };
  void open_spill();
  int64_t hidden_;
  size_t budget_, mem_used_ = 0, file_used_ = 0;
  std::string spill_path_;
  int fd_ = -1;
  std::vector<Entry> entries_;
};

}  // namespace qinfer::quant
