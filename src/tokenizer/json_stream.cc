#include "tokenizer/json_stream.h"

#include <cstdio>
#include <memory>

#include "util/error.h"

namespace qinfer::tok {
namespace {

using json = nlohmann::json;

class Handler : public nlohmann::json_sax<json> {
 public:
  explicit Handler(TokenizerJson& out) : out_(out) {}
  std::string error;  // set when a callback rejects the input

  bool null() override { return value(json()); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return number(v, json(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    return number(v > uint64_t(INT64_MAX) ? -1 : static_cast<int64_t>(v), json(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool binary(binary_t&) override { return reject("binary values are not JSON"); }
  bool string(string_t& s) override {
    if (mode_ == kMerges) {
      if (depth_ == 1) {
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
          return reject("field model.merges[" + std::to_string(out_.merges.size()) + "]: \"" + s + "\" is not \"left right\"");
        out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        return true;
      }
      if (depth_ == 2 && pair_.size() < 2) {
        pair_.push_back(std::move(s));
        return true;
      }
      return bad_merge();
    }
    if (mode_ == kVocab) return bad_vocab();
    return value(json(std::move(s)));
  }
  bool key(string_t& k) override {
    if (mode_ == kVocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    if (mode_ == kMerges) return bad_merge();
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override {
    if (mode_ == kVocab) return bad_vocab();
    if (mode_ == kMerges) return bad_merge();
    if (at_model_field("vocab")) {
      out_.vocab_streamed = true;
      mode_ = kVocab;
      depth_ = 1;
      return value(json());
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ == kVocab) {
      mode_ = kDom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == kVocab) return bad_vocab();
    if (mode_ == kMerges) {
      if (depth_ != 1) return bad_merge();
      depth_ = 2;
      pair_.clear();
      return true;
    }
    if (at_model_field("merges")) {
      out_.merges_streamed = true;
      mode_ = kMerges;
      depth_ = 1;
      return value(json());
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == kMerges) {
      if (depth_ == 2) {
        if (pair_.size() != 2) return bad_merge();
        out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
        depth_ = 1;
      } else {
        mode_ = kDom;
      }
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error.empty()) error = std::string("malformed JSON: ") + e.what();
    return false;
  }

 private:
  enum Mode { kDom, kVocab, kMerges };
  struct Frame {
    json* node;
    std::string name;  // key under which the node sits in its parent ("" for the root / array items)
  };

  bool reject(std::string msg) {
    error = std::move(msg);
    return false;
  }
  bool bad_vocab() { return reject("field model.vocab[\"" + vocab_key_ + "\"] is not a valid token id"); }
  bool bad_merge() {
    return reject("field model.merges[" + std::to_string(out_.merges.size()) + "] is neither \"left right\" nor [\"left\", \"right\"]");
  }
  bool number(int64_t id, json v) {
    if (mode_ == kVocab) {
      if (id < 0 || id > 100000000) return bad_vocab();
      out_.vocab.emplace_back(std::move(vocab_key_), id);
      return true;
    }
    if (mode_ == kMerges) return bad_merge();
    return value(std::move(v));
  }
  // The next value is the field `name` of the top-level "model" object.
  bool at_model_field(const char* name) const {
    return stack_.size() == 2 && stack_[1].name == "model" && stack_[1].node->is_object() && key_ == name;
  }
  json* insert(json v) {
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return &out_.doc;
    }
    json& top = *stack_.back().node;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool value(json v) {
    insert(std::move(v));
    return true;
  }
  bool open(json v) {
    const bool in_object = !stack_.empty() && stack_.back().node->is_object();
    std::string name = in_object ? key_ : std::string();
    json* node = insert(std::move(v));
    stack_.push_back({node, std::move(name)});
    return true;
  }

  TokenizerJson& out_;
  std::vector<Frame> stack_;
  std::string key_, vocab_key_;
  Mode mode_ = kDom;
  int depth_ = 0;
  std::vector<std::string> pair_;
};

}  // namespace

std::string read_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, ": cannot open file");
  std::string data;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long size = std::ftell(f.get());
    if (size > 0) data.reserve(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.append(buf, n);
  if (std::ferror(f.get())) fail(path, ": read error");
  return data;
}

TokenizerJson parse_tokenizer_json(const std::string& text, const std::string& path) {
  TokenizerJson out;
  Handler h(out);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &h);
  } catch (const json::exception& e) {
    fail(path, ": malformed JSON: ", e.what());
  }
  if (!ok) fail(path, ": ", h.error.empty() ? std::string("malformed JSON") : h.error);
  return out;
}

}  // namespace qinfer::tok
