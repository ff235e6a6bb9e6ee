// Calibration data for the quantizer: token id sequences from text files and
// JSONL files, mixed round-robin in the order the files are given (sample 1 of
// each file, then sample 2 of each, ...), until --samples are collected.
//   *.jsonl / *.ndjson: one sample per line, an object with "input_ids" (token
//     ids, GPTQModel's pre-tokenized form), "text" (tokenized as is) or "messages"
//     (instruction data, rendered with the model's chat template first);
//   any other file: plain text, tokenized whole and cut into --seq-len pieces.
// Every sample is cut to seq_len tokens; samples of <= 10 tokens are dropped
// (as GPTQModel's calibration preparation does). A file that yields no sample is
// an Error naming it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qinfer::quant {

struct CalibrationOptions {
  std::vector<std::string> files;
  int64_t samples = 128;
  int64_t seq_len = 2048;
  int64_t vocab_size = 0;         // ids must lie below it
  std::string model_dir;          // tokenizer.json / chat template, loaded only when text needs them
};

struct CalibrationSet {
  std::vector<std::vector<int>> samples;
  int64_t total_tokens = 0;
  std::vector<int64_t> samples_per_file;
};

CalibrationSet load_calibration(const CalibrationOptions& opt);

}  // namespace qinfer::quant
