// JSON Schema (the subset structured-output clients use) to the grammar tree. The output is
// compact JSON with ", " and ": " separators and no other whitespace, properties in schema
// order. Supported:
//   type (one or a list), enum, const, properties / required, additionalProperties (false or
//   absent: no other keys when `properties` is given; true / a schema: extra keys after the
//   declared ones), items, prefixItems, minItems / maxItems, anyOf / oneOf (oneOf is treated
//   as anyOf), allOf with one entry, $ref to "#", "#/$defs/..", "#/definitions/.." (recursion
//   unrolled to kMaxRefDepth levels), minLength / maxLength, pattern, format (date, time,
//   date-time, uuid, email, ipv4, hostname, uri), minimum / maximum / exclusiveMinimum /
//   exclusiveMaximum (any integer bound; integer-valued bounds for "number"), boolean schemas.
//   Annotations (title, description, default, examples, $schema, $id, $comment, ...) are ignored.
// Anything else (multipleOf, uniqueItems: true, not, if/then/else, patternProperties,
// min/maxProperties, contains, dependent*, unknown formats, ...) is a GrammarError naming the
// keyword and its JSON pointer. A schema with no constraint matches any JSON value (nesting
// unrolled to kMaxAnyDepth levels, strings unbounded, numbers bounded in digits).
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/ast.h"

namespace qinfer::grammar {

inline constexpr int kMaxRefDepth = 3;
inline constexpr int kMaxAnyDepth = 5;

// where: prefix for messages ("response_format.json_schema.schema").
NodePtr json_schema_grammar(const nlohmann::ordered_json& schema, std::string_view where);
// Any JSON value / any JSON object, nesting up to `depth` containers.
NodePtr any_json_value(int depth);
NodePtr any_json_object(int depth);
// A JSON string literal "..." (the JSON encoding of the string).
NodePtr json_string_literal(std::string_view value);
// A JSON string with minLength..maxLength characters (max < 0: unbounded).
NodePtr json_string(int min_len, int max_len);

}  // namespace qinfer::grammar
