#include "tokenizer/tokenizer_json.h"

#include <cstdio>
#include <memory>

#include "util/error.h"

namespace qinfer::tok {

namespace {

using nlohmann::json;

// SAX handler: builds a DOM for everything except model.vocab / model.merges.
class Handler : public nlohmann::json_sax<json> {
 public:
  explicit Handler(TokenizerJson& out) : out_(out) {}

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return integer(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return integer(v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (mode_ == Mode::kVocab) return bad_vocab_value();
    if (mode_ == Mode::kMerges || mode_ == Mode::kMergePair) return bad_merge();
    return value(json(v));
  }
  bool string(string_t& s) override {
    if (mode_ == Mode::kVocab) return bad_vocab_value();
    if (mode_ == Mode::kMerges) {
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) return bad_merge(s);
      out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      pair_.push_back(std::move(s));
      return true;
    }
    return value(json(std::move(s)));
  }
  bool binary(binary_t&) override { return value(json()); }

  bool start_object(std::size_t) override {
    if (mode_ == Mode::kMerges || mode_ == Mode::kMergePair) return bad_merge();
    if (mode_ == Mode::kVocab) return bad_vocab_value();
    if (pending_key_ == "vocab" && in_model()) {
      mode_ = Mode::kVocab;
      out_.has_vocab = true;
      return true;
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kNone;
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::kVocab) return bad_vocab_value();
    if (mode_ == Mode::kMergePair) return bad_merge();
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_.clear();
      return true;
    }
    if (pending_key_ == "merges" && in_model()) {
      mode_ = Mode::kMerges;
      out_.has_merges = true;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::kMergePair) {
      mode_ = Mode::kMerges;
      if (pair_.size() != 2) return bad_merge();
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kNone;
      return true;
    }
    return close();
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    pending_key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = std::string("malformed JSON: ") + e.what();
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  enum class Mode { kNone, kVocab, kMerges, kMergePair };

  // True when the object being filled is the top-level "model" object.
  bool in_model() const { return stack_.size() == 2 && keys_.size() == 2 && keys_[1] == "model"; }

  bool integer(int64_t v) {
    if (mode_ == Mode::kVocab) {
      out_.vocab.emplace_back(std::move(vocab_key_), v);
      return true;
    }
    if (mode_ == Mode::kMerges || mode_ == Mode::kMergePair) return bad_merge();
    return value(json(v));
  }
  bool bad_vocab_value() {
    error_ = "model.vocab[" + json(vocab_key_).dump() + "] must be an integer id";
    return false;
  }
  bool bad_merge(const std::string& text = "") {
    error_ = "model.merges[" + std::to_string(out_.merges.size()) + "] " +
             (text.empty() ? std::string() : json(text).dump() + " ") +
             "must be \"a b\" (two tokens, one space) or [\"a\", \"b\"]";
    return false;
  }
  bool value(json v) {
    if (stack_.empty()) {
      out_.rest = std::move(v);
      return true;
    }
    json& top = *stack_.back();
    if (top.is_object()) {
      top[pending_key_] = std::move(v);
    } else {
      top.push_back(std::move(v));
    }
    return true;
  }
  bool open(json container) {
    json* slot;
    if (stack_.empty()) {
      out_.rest = std::move(container);
      slot = &out_.rest;
    } else {
      json& top = *stack_.back();
      if (top.is_object()) {
        slot = &(top[pending_key_] = std::move(container));
      } else {
        top.push_back(std::move(container));
        slot = &top.back();
      }
    }
    keys_.push_back(stack_.empty() || !stack_.back()->is_object() ? std::string() : pending_key_);
    stack_.push_back(slot);
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  TokenizerJson& out_;
  Mode mode_ = Mode::kNone;
  std::vector<json*> stack_;
  std::vector<std::string> keys_;  // key under which each open container sits
  std::string pending_key_, vocab_key_, error_;
  std::vector<std::string> pair_;
};

}  // namespace

std::string read_whole_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, ": cannot open file");
  std::string data;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long size = std::ftell(f.get());
    if (size > 0) data.reserve(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.append(buf, got);
  if (std::ferror(f.get())) fail(path, ": read error");
  return data;
}

TokenizerJson read_tokenizer_json(const std::string& path) {
  const std::string text = read_whole_file(path);
  TokenizerJson out;
  out.vocab.reserve(text.size() / 40);
  out.merges.reserve(text.size() / 40);
  Handler h(out);
  const bool ok = json::sax_parse(text, &h);
  if (!ok) fail(path, ": ", h.error().empty() ? "malformed JSON" : h.error());
  if (!out.rest.is_object()) fail(path, ": top level is not an object");
  return out;
}

}  // namespace qinfer::tok
