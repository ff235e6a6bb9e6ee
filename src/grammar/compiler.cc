#include "grammar/compiler.h"

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"
#include "grammar/tool_call.h"
#include "util/json_parse.h"

namespace qinfer::grammar {

using ojson = nlohmann::ordered_json;

namespace {

ojson parse_json(const Spec& spec) {
  try {
    return parse_ordered_json(spec.text, spec.field);
  } catch (const std::exception& e) {
    throw GrammarError(spec.field + ": not valid JSON: " + e.what());
  }
}

}  // namespace

NodePtr spec_tree(const Spec& spec) {
  switch (spec.kind) {
    case SpecKind::kJsonSchema:
      return json_schema_grammar(parse_json(spec), spec.field);
    case SpecKind::kJsonObject:
      return any_json_object(kMaxAnyDepth);
    case SpecKind::kRegex:
      return parse_regex(spec.text, false, spec.field);
    case SpecKind::kChoice: {
      ojson a = parse_json(spec);
      if (!a.is_array() || a.empty()) throw GrammarError(spec.field + ": must be a non-empty list of strings");
      std::vector<NodePtr> alts;
      for (const auto& c : a) {
        if (!c.is_string()) throw GrammarError(spec.field + ": must be a non-empty list of strings");
        alts.push_back(literal(c.get<std::string>()));
      }
      return alt(std::move(alts));
    }
    case SpecKind::kGbnf: {
      // Deep recursion can make the unrolled grammar too large: retry shallower.
      for (int depth = kMaxGbnfDepth;; --depth) {
        try {
          NodePtr n = gbnf_grammar(spec.text, spec.field, depth);
          Nfa::build(*n);  // size check
          return n;
        } catch (const GrammarError& e) {
          if (depth <= 1 || std::string(e.what()).find("too large") == std::string::npos) throw;
        }
      }
    }
    case SpecKind::kToolCall: {
      ojson j = parse_json(spec);
      return tool_call_grammar(j["tools"], j.value("name", std::string()), spec.field);
    }
  }
  throw GrammarError(spec.field + ": unknown structured output kind");
}

Compiler::Compiler(std::shared_ptr<const TokenVocab> vocab, size_t cache_entries)
    : vocab_(std::move(vocab)), capacity_(std::max<size_t>(1, cache_entries)) {}

size_t Compiler::cache_size() const {
  std::lock_guard<std::mutex> lk(mu_);
  return cache_.size();
}

std::shared_ptr<const Grammar> Compiler::compile(const Spec& spec) {
  const std::string key = std::to_string(int(spec.kind)) + '\0' + spec.text;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      return it->second.first;
    }
  }
  std::shared_ptr<const Grammar> g;
  try {
    g = std::make_shared<const Grammar>(spec_tree(spec), vocab_);
  } catch (const GrammarError& e) {
    const std::string msg = e.what();
    if (msg.rfind(spec.field, 0) == 0) throw;
    throw GrammarError(spec.field + ": " + msg);  // e.g. the automaton size limit
  }
  std::lock_guard<std::mutex> lk(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.first;
  lru_.push_front(key);
  cache_.emplace(key, std::make_pair(g, lru_.begin()));
  while (cache_.size() > capacity_) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  return g;
}

}  // namespace qinfer::grammar
