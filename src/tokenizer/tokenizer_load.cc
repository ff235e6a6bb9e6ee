// Tokenizer::load: reads tokenizer.json (+ tokenizer_config.json) into Tokenizer::Impl.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_stream.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer {
namespace {

using json = nlohmann::json;
using Impl = Tokenizer::Impl;

// Ids may leave gaps, but not so many that the per-id tables become huge: every id (vocab or
// added) must be below the number of vocab entries plus this. Ids above INT_MAX used to wrap
// (4294967301 replaced token 5) and 999999999 allocated ~14 GB.
constexpr int64_t kMaxTokenIdSlack = 1 << 16;

// What ByteLevel(use_regex = true) splits with (GPT-2).
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

json read_json(const std::string& path) { return read_json_file(path); }

// Field access whose errors name the file and the field.
struct Ctx {
  const std::string& path;
  int64_t id_limit = kMaxTokenIdSlack;  // ids must be below this (set from the vocabulary size)

  const json& at(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) fail(path, ": field ", where.empty() ? "(top level)" : where, " is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, ": missing field ", where.empty() ? "" : where + ".", key);
    return *it;
  }
  std::string str(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(path, ": field ", where, " is not a string");
    return v.get<std::string>();
  }
  bool flag(const json& obj, const char* key, const std::string& where, bool dflt) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) fail(path, ": field ", where, ".", key, " is not a boolean");
    return it->get<bool>();
  }
  const json& array(const json& obj, const char* key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_array()) fail(path, ": field ", where.empty() ? "" : where + ".", key, " is not an array");
    return v;
  }
  std::string type_of(const json& obj, const std::string& where) const {
    return str(at(obj, "type", where), where + ".type");
  }
  int id(const json& v, const std::string& where) const {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT32_MAX) ||
        v.get<int64_t>() < 0)
      fail(path, ": field ", where, " is not a valid token id");
    check_id(v.get<int64_t>(), where);
    return v.get<int>();
  }
  void check_id(int64_t id, const std::string& where) const {
    if (id < 0 || id >= id_limit)
      fail(path, ": field ", where, ": token id ", id, " is out of range (ids must be below ", id_limit,
           ": the vocabulary size plus ", kMaxTokenIdSlack, ")");
  }
};

std::string item(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// Accepts the normalisers implemented here: none, NFC, or a Sequence of those.
void read_normalizer(const Ctx& c, const json& n, const std::string& where, bool& nfc) {
  if (n.is_null()) return;
  const std::string type = c.type_of(n, where);
  if (type == "NFC") {
    nfc = true;
  } else if (type == "Sequence") {
    const json& list = c.array(n, "normalizers", where);
    for (size_t i = 0; i < list.size(); ++i) read_normalizer(c, list[i], item(where + ".normalizers", i), nfc);
  } else {
    fail(c.path, ": field ", where, ": unsupported normalizer type \"", type, "\" (supported: NFC)");
  }
}

// Accepts Split(Regex, Isolated) followed by ByteLevel(use_regex=false), or ByteLevel alone.
// Returns the split pattern.
std::string read_pre_tokenizer(const Ctx& c, const json& p) {
  if (p.is_null()) fail(c.path, ": field pre_tokenizer is null; a ByteLevel pre-tokenizer is required");
  std::vector<std::pair<const json*, std::string>> steps;
  if (c.type_of(p, "pre_tokenizer") == "Sequence") {
    const json& list = c.array(p, "pretokenizers", "pre_tokenizer");
    for (size_t i = 0; i < list.size(); ++i) steps.push_back({&list[i], item("pre_tokenizer.pretokenizers", i)});
  } else {
    steps.push_back({&p, "pre_tokenizer"});
  }
  std::string pattern;
  bool byte_level = false;
  for (const auto& [step, where] : steps) {
    const std::string type = c.type_of(*step, where);
    if (byte_level) fail(c.path, ": field ", where, ": pre-tokenizers after ByteLevel are not supported");
    if (type == "Split") {
      if (!pattern.empty()) fail(c.path, ": field ", where, ": only one Split pre-tokenizer is supported");
      const json& pat = c.at(*step, "pattern", where);
      if (!pat.is_object() || !pat.contains("Regex"))
        fail(c.path, ": field ", where, ".pattern: only {\"Regex\": ...} is supported");
      pattern = c.str(pat["Regex"], where + ".pattern.Regex");
      const std::string behavior = c.str(c.at(*step, "behavior", where), where + ".behavior");
      if (behavior != "Isolated") fail(c.path, ": field ", where, ".behavior: \"", behavior, "\" is not supported (only Isolated)");
      if (c.flag(*step, "invert", where, false)) fail(c.path, ": field ", where, ".invert: true is not supported");
    } else if (type == "ByteLevel") {
      byte_level = true;
      if (c.flag(*step, "add_prefix_space", where, false))
        fail(c.path, ": field ", where, ".add_prefix_space: true is not supported");
      if (c.flag(*step, "use_regex", where, true)) {
        if (!pattern.empty()) fail(c.path, ": field ", where, ": Split followed by ByteLevel(use_regex=true) is not supported");
        pattern = kGpt2Pattern;
      }
    } else {
      fail(c.path, ": field ", where, ": unsupported pre-tokenizer type \"", type, "\"");
    }
  }
  if (!byte_level) fail(c.path, ": field pre_tokenizer: no ByteLevel step (only byte-level BPE is supported)");
  return pattern;
}

using MergeStrings = std::vector<std::pair<std::string, std::string>>;

void read_model(Ctx& c, const json& m, tok::TokenizerJson& tj, Impl& t) {
  if (m.contains("type") && c.type_of(m, "model") != "BPE")
    fail(c.path, ": field model.type: ", m["type"].dump(), " is not supported (only BPE)");
  if (c.flag(m, "byte_fallback", "model", false)) fail(c.path, ": field model.byte_fallback: true is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = m.find(key);
    if (it != m.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      fail(c.path, ": field model.", key, ": a non-empty value is not supported");
  }
  t.ignore_merges = c.flag(m, "ignore_merges", "model", false);

  // Streamed only when they are an object / an array; otherwise say what is wrong.
  if (!tj.vocab_streamed) c.at(m, "vocab", "model"), fail(c.path, ": field model.vocab is not an object");
  if (!tj.merges_streamed) c.at(m, "merges", "model"), fail(c.path, ": field model.merges is not an array");
  if (tj.vocab.empty()) fail(c.path, ": field model.vocab is empty");
  c.id_limit = static_cast<int64_t>(tj.vocab.size()) + kMaxTokenIdSlack;
  size_t total = 0;
  int64_t max_id = 0;
  for (const auto& [token, id] : tj.vocab) {
    c.check_id(id, "model.vocab[\"" + token + "\"]");
    total += token.size(), max_id = std::max(max_id, id);
  }
  t.store.reserve(tj.vocab.size() + 64, total);
  t.kind.reserve(max_id + 64);
  t.special.reserve(max_id + 64);
  std::string bytes;
  for (const auto& [token, id] : tj.vocab) {
    if (!tok::byte_level_decode_to(token, bytes) || bytes.empty())
      fail(c.path, ": field model.vocab: token \"", token, "\" is not a byte-level string");
    t.add_token(static_cast<int>(id), bytes, Impl::kVocab, false);
  }
}

// Ids of both halves and of the result of every merge; errors name the merge.
std::vector<tok::Merge> resolve_merges(const Ctx& c, const Impl& t, const MergeStrings& merges) {
  std::vector<tok::Merge> out;
  out.reserve(merges.size());
  std::string lb, rb;
  const auto lookup = [&](std::string_view bytes, size_t i, const std::string& shown) {
    const auto id = t.store.find(bytes);
    if (!id || t.kind[*id] != Impl::kVocab)
      fail(c.path, ": field ", item("model.merges", i), ": \"", shown, "\" is not in model.vocab");
    return *id;
  };
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [ls, rs] = merges[i];
    if (!tok::byte_level_decode_to(ls, lb) || !tok::byte_level_decode_to(rs, rb))
      fail(c.path, ": field ", item("model.merges", i), ": \"", ls, " ", rs, "\" is not byte-level text");
    const int l = lookup(lb, i, ls), r = lookup(rb, i, rs);
    lb += rb;
    out.push_back({l, r, lookup(lb, i, ls + rs)});
  }
  return out;
}

AddedToken read_added(const Ctx& c, const json& e, int id, const std::string& where) {
  AddedToken a{id, c.str(c.at(e, "content", where), where + ".content"), c.flag(e, "special", where, false)};
  if (a.content.empty()) fail(c.path, ": field ", where, ".content is empty");
  return a;
}

// Parses tokenizer.json into t; returns its added tokens.
std::vector<AddedToken> read_tokenizer_json(const std::string& path, Impl& t, int64_t& id_limit) {
  tok::TokenizerJson tj = tok::parse_tokenizer_json(read_regular_file(path), path);
  const json& doc = tj.doc;
  Ctx c{path};
  if (!doc.is_object()) fail(path, ": top level is not a JSON object");
  read_model(c, c.at(doc, "model", ""), tj, t);
  read_normalizer(c, doc.value("normalizer", json()), "normalizer", t.nfc);
  const std::string pattern = read_pre_tokenizer(c, c.at(doc, "pre_tokenizer", ""));
  if (doc.contains("decoder") && !doc["decoder"].is_null() && c.type_of(doc["decoder"], "decoder") != "ByteLevel")
    fail(path, ": field decoder.type: only ByteLevel is supported");
  if (!pattern.empty()) t.splitter = std::make_unique<tok::RegexSplitter>(pattern, path + ": field pre_tokenizer");

  std::array<int, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    const char ch = static_cast<char>(b);
    const auto id = t.store.find(std::string_view(&ch, 1));
    if (!id || t.kind[*id] != Impl::kVocab) fail(path, ": field model.vocab: no token for byte ", b);
    byte_ids[b] = *id;
  }
  t.bpe = std::make_unique<tok::BpeModel>(byte_ids, resolve_merges(c, t, tj.merges));

  std::vector<AddedToken> added;
  if (doc.contains("added_tokens")) {
    const json& list = c.array(doc, "added_tokens", "");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = item("added_tokens", i);
      added.push_back(read_added(c, list[i], c.id(c.at(list[i], "id", where), where + ".id"), where));
    }
  }
  id_limit = c.id_limit;
  return added;
}

// Adds the entries of tokenizer_config.json's added_tokens_decoder whose id is not taken yet.
void read_tokenizer_config(const std::string& path, std::vector<AddedToken>& added, int64_t id_limit) {
  const json cfg = read_json(path);
  const Ctx c{path, id_limit};
  if (!cfg.is_object()) fail(path, ": top level is not a JSON object");
  if (!cfg.contains("added_tokens_decoder")) return;
  const json& dec = cfg["added_tokens_decoder"];
  if (!dec.is_object()) fail(path, ": field added_tokens_decoder is not an object");
  for (auto it = dec.begin(); it != dec.end(); ++it) {
    const std::string where = "added_tokens_decoder[\"" + it.key() + "\"]";
    const std::string& key = it.key();
    if (key.empty() || key.size() > 9 || !std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      fail(path, ": field ", where, ": the key is not a token id");
    const int id = std::stoi(key);
    c.check_id(id, where);
    if (std::any_of(added.begin(), added.end(), [&](const AddedToken& a) { return a.id == id; })) continue;
    added.push_back(read_added(c, it.value(), id, where));
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(model_dir) / "tokenizer.json").string();
  if (!fs::exists(path)) fail(path, ": file not found (a model folder needs tokenizer.json)");
  auto t = std::make_shared<Impl>();
  int64_t id_limit = 0;
  std::vector<AddedToken> added = read_tokenizer_json(path, *t, id_limit);
  const std::string cfg_path = (fs::path(model_dir) / "tokenizer_config.json").string();
  if (fs::exists(cfg_path)) read_tokenizer_config(cfg_path, added, id_limit);

  std::sort(added.begin(), added.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  for (const AddedToken& a : added) t->add_token(a.id, a.content, Impl::kAdded, a.special);
  t->added = std::move(added);
  t->matcher = std::make_unique<tok::AddedTokenMatcher>(t->added);
  for (int id = 0; id < t->store.size(); ++id) {
    if (t->store.has(id)) t->max_token_bytes = std::max(t->max_token_bytes, t->store.bytes(id).size());
  }
  return Tokenizer(std::move(t));
}

}  // namespace qinfer
