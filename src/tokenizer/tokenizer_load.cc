// Tokenizer::load: reads tokenizer.json (+ tokenizer_config.json) into TokenizerData.
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/tokenizer_json.h"
#include "util/error.h"

namespace qinfer {

namespace {

using nlohmann::json;
using tok::TokenizerData;

json parse_json(const std::string& path) {
  const std::string text = tok::read_whole_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(path, ": malformed JSON: ", e.what());
  }
}

// Field access that names the file and the field on failure.
const json& field(const json& obj, const char* key, const std::string& path, const std::string& where) {
  if (!obj.is_object()) fail(path, ": ", where, " is not an object");
  auto it = obj.find(key);
  if (it == obj.end()) fail(path, ": missing field ", where, ".", key);
  return *it;
}

std::string string_or(const json& obj, const char* key, const std::string& fallback) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : fallback;
}

bool bool_or(const json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

void check_normalizer(const json& j, const std::string& path) {
  auto it = j.find("normalizer");
  if (it == j.end() || it->is_null()) fail(path, ": normalizer is null; only NFC is supported");
  if (string_or(*it, "type", "") != "NFC") fail(path, ": unsupported normalizer ", it->dump(), " (only NFC)");
}

tok::PretokenizerKind check_pretokenizer(const json& j, const std::string& path) {
  const json& pre = field(j, "pre_tokenizer", path, "tokenizer");
  const std::string shape_error = cat(path, ": unsupported pre_tokenizer (expected Sequence[Split(Qwen regex, ",
                                      "Isolated), ByteLevel(use_regex=false)])");
  if (string_or(pre, "type", "") != "Sequence") fail(shape_error);
  const json& list = field(pre, "pretokenizers", path, "pre_tokenizer");
  if (!list.is_array() || list.size() != 2) fail(shape_error);
  const json& split = list[0];
  const json& bl = list[1];
  if (string_or(split, "type", "") != "Split" || string_or(split, "behavior", "") != "Isolated" ||
      bool_or(split, "invert", false) || string_or(bl, "type", "") != "ByteLevel" ||
      bool_or(bl, "use_regex", true) || bool_or(bl, "add_prefix_space", true)) {
    fail(shape_error);
  }
  const json& pattern = field(split, "pattern", path, "pre_tokenizer.pretokenizers[0]");
  const std::string regex = string_or(pattern, "Regex", "");
  tok::PretokenizerKind kind;
  if (!tok::pretokenizer_kind_from_regex(regex, &kind)) {
    fail(path, ": unsupported pre-tokenizer regex ", json(regex).dump(), " (only the Qwen2 and Qwen3.5 patterns)");
  }
  return kind;
}

void check_model(const json& model, const std::string& path) {
  if (string_or(model, "type", "BPE") != "BPE") fail(path, ": model.type must be BPE");
  if (bool_or(model, "byte_fallback", false)) fail(path, ": model.byte_fallback=true is not supported");
  if (!string_or(model, "continuing_subword_prefix", "").empty() || !string_or(model, "end_of_word_suffix", "").empty()) {
    fail(path, ": model.continuing_subword_prefix / end_of_word_suffix are not supported");
  }
  if (bool_or(model, "ignore_merges", false)) fail(path, ": model.ignore_merges=true is not supported");
  auto d = model.find("dropout");
  if (d != model.end() && !d->is_null() && d->is_number() && d->get<double>() != 0.0) {
    fail(path, ": model.dropout is not supported");
  }
}

tok::AddedToken parse_added(const json& t, const std::string& path, const std::string& where, int id) {
  if (!t.is_object()) fail(path, ": ", where, " is not an object");
  const json& content = field(t, "content", path, where);
  if (!content.is_string() || content.get_ref<const std::string&>().empty()) fail(path, ": ", where, ".content must be a non-empty string");
  for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
    if (bool_or(t, flag, false)) fail(path, ": ", where, ".", flag, "=true is not supported");
  }
  tok::AddedToken a;
  a.content = content.get<std::string>();
  a.id = id;
  a.special = bool_or(t, "special", false);
  return a;
}

int parse_id(const json& v, const std::string& path, const std::string& where) {
  if (!v.is_number_integer()) fail(path, ": ", where, " must be an integer id");
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id > 16'000'000) fail(path, ": ", where, " id ", id, " out of range");
  return static_cast<int>(id);
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& model_dir) {
  const std::string path = model_dir + "/tokenizer.json";
  const std::string config_path = model_dir + "/tokenizer_config.json";
  auto data = std::make_shared<TokenizerData>();
  tok::TokenizerJson tj = tok::read_tokenizer_json(path);
  const json& j = tj.rest;
  check_normalizer(j, path);
  data->kind = check_pretokenizer(j, path);
  {
    auto dec = j.find("decoder");
    if (dec == j.end() || string_or(*dec, "type", "") != "ByteLevel") fail(path, ": decoder must be ByteLevel");
  }
  const json& model = field(j, "model", path, "tokenizer");
  check_model(model, path);

  // Vocabulary (byte-level alphabet -> raw bytes).
  if (!tj.has_vocab || tj.vocab.empty()) fail(path, ": model.vocab is missing or empty");
  std::vector<std::pair<int, std::string>> entries;
  entries.reserve(tj.vocab.size());
  int max_id = -1;
  std::string raw;
  for (const auto& [token, value] : tj.vocab) {
    const int id = parse_id(json(value), path, cat("model.vocab[", json(token).dump(), "]"));
    if (!tok::byte_level_decode(token, raw)) {
      fail(path, ": model.vocab token ", json(token).dump(), " is not in the byte-level alphabet");
    }
    entries.emplace_back(id, raw);
    max_id = std::max(max_id, id);
  }
  tj.vocab = {};

  // Added tokens from tokenizer.json, then the extra ones of tokenizer_config.json.
  auto& added = data->added_tokens;
  if (auto at = j.find("added_tokens"); at != j.end() && !at->is_null()) {
    if (!at->is_array()) fail(path, ": added_tokens must be an array");
    for (size_t k = 0; k < at->size(); ++k) {
      const std::string where = cat("added_tokens[", k, "]");
      const json& t = (*at)[k];
      added.push_back(parse_added(t, path, where, parse_id(field(t, "id", path, where), path, where + ".id")));
    }
  }
  if (std::ifstream probe(config_path); probe) {
    probe.close();
    const json cfg = parse_json(config_path);
    if (auto d = cfg.find("added_tokens_decoder"); d != cfg.end() && !d->is_null()) {
      if (!d->is_object()) fail(config_path, ": added_tokens_decoder must be an object");
      for (auto it = d->begin(); it != d->end(); ++it) {
        const std::string where = cat("added_tokens_decoder[\"", it.key(), "\"]");
        int id = -1;
        try {
          size_t used = 0;
          id = std::stoi(it.key(), &used);
          if (used != it.key().size() || id < 0) id = -1;
        } catch (const std::exception&) {
        }
        if (id < 0) fail(config_path, ": ", where, ": key is not a token id");
        tok::AddedToken a = parse_added(it.value(), config_path, where, id);
        bool known = false;
        for (const auto& e : added) {
          if (e.id != id) continue;
          if (e.content != a.content) {
            fail(config_path, ": ", where, " is ", json(a.content).dump(), " but ", path, " has ",
                 json(e.content).dump(), " for that id");
          }
          known = true;
        }
        if (!known) added.push_back(std::move(a));
      }
    }
  }
  for (const auto& a : added) max_id = std::max(max_id, a.id);

  // Token byte table.
  const int n = max_id + 1;
  std::vector<const std::string*> by_id(n, nullptr);
  for (const auto& [id, bytes] : entries) {
    if (by_id[id]) fail(path, ": model.vocab uses id ", id, " twice");
    by_id[id] = &bytes;
  }
  for (const auto& a : added) {
    if (by_id[a.id] && *by_id[a.id] != a.content) {
      fail(path, ": added token ", json(a.content).dump(), " reuses vocabulary id ", a.id);
    }
    by_id[a.id] = &a.content;
  }
  data->offsets.resize(n + 1);
  data->known.assign(n, 0);
  data->special.assign(n, 0);
  data->added.assign(n, 0);
  size_t total = 0;
  for (int id = 0; id < n; ++id) total += by_id[id] ? by_id[id]->size() : 0;
  data->bytes.reserve(total);
  for (int id = 0; id < n; ++id) {
    data->offsets[id] = static_cast<uint32_t>(data->bytes.size());
    if (by_id[id]) {
      data->bytes += *by_id[id];
      data->known[id] = 1;
    }
  }
  data->offsets[n] = static_cast<uint32_t>(data->bytes.size());
  data->ids.bind(&data->bytes, &data->offsets);
  data->ids.reserve(entries.size() + added.size());
  for (const auto& [id, bytes] : entries) {
    if (!data->ids.insert(id)) {
      fail(path, ": model.vocab has two tokens with bytes ", json(tok::byte_level_encode(bytes)).dump());
    }
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const int id = data->ids.find(std::string_view(&c, 1));
    if (id < 0) fail(path, ": model.vocab lacks the single-byte token for byte ", b);
    data->byte_ids[b] = id;
  }

  // Merges: "a b" strings or [a, b] pairs, rank = position.
  if (!tj.has_merges) fail(path, ": missing field model.merges");
  data->merges.reserve(tj.merges.size());
  std::string left, right, joined;
  for (size_t r = 0; r < tj.merges.size(); ++r) {
    const auto& [a, b] = tj.merges[r];
    auto m = [&] { return json(a + " " + b).dump(); };
    if (!tok::byte_level_decode(a, left) || !tok::byte_level_decode(b, right)) {
      fail(path, ": model.merges[", r, "] ", m(), " is not in the byte-level alphabet");
    }
    joined = left;
    joined += right;
    const int ia = data->ids.find(left), ib = data->ids.find(right), im = data->ids.find(joined);
    if (ia < 0 || ib < 0 || im < 0) {
      fail(path, ": model.merges[", r, "] ", m(), " names a token missing from model.vocab");
    }
    data->merges.add(ia, ib, static_cast<int>(r), im);
  }

  for (const auto& a : added) {
    data->ids.insert(a.id, /*replace=*/true);
    data->added[a.id] = 1;
    data->special[a.id] = a.special ? 1 : 0;
  }
  data->matcher.build(data->added_tokens);

  Tokenizer t;
  t.data_ = std::move(data);
  return t;
}

}  // namespace qinfer
