#include "quant/calibration.h"

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace qinfer::quant {

namespace {

constexpr int64_t kMinTokens = 11;   // GPTQModel drops rows of <= 10 tokens

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// Tokenizer and chat template of the model, loaded on first use.
class TextCodec {
 public:
  explicit TextCodec(std::string dir) : dir_(std::move(dir)) {}
  std::vector<int> encode(const std::string& text, bool parse_special, const std::string& where) {
    if (!tok_) {
      try {
        tok_.emplace(Tokenizer::load(dir_));
      } catch (const Error& e) {
        fail(where, ": text calibration data needs the model's tokenizer: ", e.what());
      }
    }
    return tok_->encode(text, parse_special);
  }
  std::string render(const nlohmann::json& messages, const std::string& where) {
    if (!tmpl_) {
      try {
        tmpl_ = std::make_unique<ChatTemplate>(ChatTemplate::load(dir_));
      } catch (const Error& e) {
        fail(where, ": \"messages\" need the model's chat template: ", e.what());
      }
    }
    try {
      return tmpl_->apply(messages, nlohmann::json(), false);
    } catch (const Error& e) {
      fail(where, ": chat template: ", e.what());
    }
  }

 private:
  std::string dir_;
  std::optional<Tokenizer> tok_;
  std::unique_ptr<ChatTemplate> tmpl_;
};

// One calibration file, read sample by sample.
class Source {
 public:
  Source(std::string path, const CalibrationOptions& opt, TextCodec& codec)
      : path_(std::move(path)), opt_(opt), codec_(codec), in_(path_, std::ios::binary) {
    if (!in_) fail(path_, ": cannot open calibration file");
    jsonl_ = ends_with(path_, ".jsonl") || ends_with(path_, ".ndjson");
    if (ends_with(path_, ".json"))
      fail(path_, ": a .json file is not read as calibration data: give JSONL (one JSON object per line, named "
                  ".jsonl) or plain text");
  }
  const std::string& path() const { return path_; }

  // The next sample, or false at the end of the file.
  bool next(std::vector<int>* ids) {
    while (true) {
      if (jsonl_) {
        if (!next_line(ids)) return false;
      } else {
        if (!next_chunk(ids)) return false;
      }
      if (static_cast<int64_t>(ids->size()) > opt_.seq_len) ids->resize(static_cast<size_t>(opt_.seq_len));
      if (static_cast<int64_t>(ids->size()) >= kMinTokens) return true;
    }
  }

 private:
  bool next_line(std::vector<int>* ids) {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_no_;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = path_ + ":" + std::to_string(line_no_);
      nlohmann::json j;
      try {
        j = parse_json(line, where);
      } catch (const JsonError& e) {
        fail(e.what(), " (each line must be a JSON object)");  // e.what() starts with file:line
      }
      if (!j.is_object()) fail(where, ": not a JSON object");
      ids->clear();
      if (j.contains("input_ids")) {
        const auto& a = j["input_ids"];
        if (!a.is_array()) fail(where, ": \"input_ids\" must be an array of token ids");
        for (const auto& v : a) {
          if (!v.is_number_integer()) fail(where, ": \"input_ids\" must be an array of token ids");
          const int64_t id = v.get<int64_t>();
          if (id < 0 || id >= opt_.vocab_size)
            fail(where, ": token id ", id, " in \"input_ids\" is outside the vocabulary 0..", opt_.vocab_size - 1);
          ids->push_back(static_cast<int>(id));
        }
      } else if (j.contains("text")) {
        if (!j["text"].is_string()) fail(where, ": \"text\" must be a string");
        *ids = codec_.encode(j["text"].get<std::string>(), false, where);
      } else if (j.contains("messages")) {
        if (!j["messages"].is_array()) fail(where, ": \"messages\" must be an array of chat messages");
        *ids = codec_.encode(codec_.render(j["messages"], where), true, where);
      } else {
        fail(where, ": a calibration line needs \"text\", \"messages\" or \"input_ids\"");
      }
      check_ids(*ids, where);
      return true;
    }
    return false;
  }

  bool next_chunk(std::vector<int>* ids) {
    if (!tokenized_) {
      std::stringstream ss;
      ss << in_.rdbuf();
      const std::string text = ss.str();
      if (text.find('\0') != std::string::npos)
        fail(path_, ": not a text file (it holds NUL bytes): calibration files are plain text or JSONL (.jsonl); "
                    "decompress or convert other formats first");
      all_ = codec_.encode(text, false, path_);
      check_ids(all_, path_);
      tokenized_ = true;
    }
    if (pos_ >= all_.size()) return false;
    const size_t n = std::min(all_.size() - pos_, static_cast<size_t>(opt_.seq_len));
    ids->assign(all_.begin() + static_cast<std::ptrdiff_t>(pos_), all_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
    pos_ += n;
    return true;
  }

  void check_ids(const std::vector<int>& ids, const std::string& where) const {
    for (int id : ids)
      if (id < 0 || id >= opt_.vocab_size)
        fail(where, ": token id ", id, " is outside the model's vocabulary 0..", opt_.vocab_size - 1);
  }

  std::string path_;
  const CalibrationOptions& opt_;
  TextCodec& codec_;
  std::ifstream in_;
  bool jsonl_ = false;
  int64_t line_no_ = 0;
  bool tokenized_ = false;
  std::vector<int> all_;
  size_t pos_ = 0;
};

}  // namespace

CalibrationSet load_calibration(const CalibrationOptions& opt) {
  if (opt.files.empty()) fail("--calibration: no calibration file given");
  if (opt.samples < 1) fail("--samples must be at least 1 (got ", opt.samples, ")");
  if (opt.seq_len < kMinTokens) fail("--seq-len must be at least ", kMinTokens, " (got ", opt.seq_len, ")");
  TextCodec codec(opt.model_dir);
  std::vector<std::unique_ptr<Source>> sources;
  for (const auto& f : opt.files) sources.push_back(std::make_unique<Source>(f, opt, codec));
  CalibrationSet set;
  set.samples_per_file.assign(sources.size(), 0);
  std::vector<bool> done(sources.size(), false);
  size_t open = sources.size();
  std::vector<int> ids;
  while (open > 0 && static_cast<int64_t>(set.samples.size()) < opt.samples) {
    for (size_t i = 0; i < sources.size() && static_cast<int64_t>(set.samples.size()) < opt.samples; ++i) {
      if (done[i]) continue;
      if (!sources[i]->next(&ids)) {
        done[i] = true;
        --open;
        if (set.samples_per_file[i] == 0)
          fail(sources[i]->path(), ": no calibration sample in this file (it is empty, or every sample has fewer than ",
               kMinTokens, " tokens)");
        continue;
      }
      set.total_tokens += static_cast<int64_t>(ids.size());
      set.samples.push_back(ids);
      ++set.samples_per_file[i];
    }
  }
  for (size_t i = 0; i < sources.size(); ++i)
    if (set.samples_per_file[i] == 0 && !done[i]) {
      // --samples was reached before this file was read: still check it is not empty.
      if (!sources[i]->next(&ids))
        fail(sources[i]->path(), ": no calibration sample in this file (it is empty, or every sample has fewer than ",
             kMinTokens, " tokens)");
    }
  if (static_cast<int64_t>(set.samples.size()) < opt.samples)
    log_warn("calibration: only ", set.samples.size(), " samples in the given files (--samples ", opt.samples, ")");
  return set;
}

}  // namespace qinfer::quant
