// Methods of str, dict, list and tuple values callable from templates
// ("a,b".split(","), d.get("k"), d.items(), ...). Mutating methods exist but
// refuse to run, as in Jinja's ImmutableSandboxedEnvironment.
#pragma once
#include <string>

#include "jinja/value.h"

namespace qinfer::jinja {

// `self.name` as a bound callable, or Undefined when `self` has no such method.
Value bound_method(const Value& self, const std::string& name);

// The (key, value) tuples of a dict, in order: dict.items() and the `items` filter.
Value dict_items(const Value& dict);

}  // namespace qinfer::jinja
