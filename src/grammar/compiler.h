// Front door of the grammar module: compiles a structured-output request (JSON Schema,
// any JSON object, regex, choice list, GBNF grammar, forced tool call) to a Grammar bound to
// the tokenizer's vocabulary, and caches the result by (kind, text): a repeated schema costs
// one map lookup. Thread-safe. Errors are GrammarError with the request field in the message.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace qinfer::grammar {

enum class SpecKind { kJsonSchema, kJsonObject, kRegex, kChoice, kGbnf, kToolCall };

struct Spec {
  SpecKind kind = SpecKind::kJsonSchema;
  // kJsonSchema: the schema as JSON text; kRegex: the pattern; kChoice: a JSON array of
  // strings; kGbnf: the grammar; kToolCall: {"tools": [...], "name": "..."} as JSON text.
  std::string text;
  std::string field;  // the request field, for messages ("response_format.json_schema.schema")
};

// The grammar tree of a spec (no vocabulary needed; used by tests and the compiler).
NodePtr spec_tree(const Spec& spec);

class Compiler {
 public:
  explicit Compiler(std::shared_ptr<const TokenVocab> vocab, size_t cache_entries = 64);
  std::shared_ptr<const Grammar> compile(const Spec& spec);
  const std::shared_ptr<const TokenVocab>& vocab() const { return vocab_; }
  size_t cache_size() const;

 private:
  std::shared_ptr<const TokenVocab> vocab_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<const Grammar>, std::list<std::string>::iterator>> cache_;
};

}  // namespace qinfer::grammar
