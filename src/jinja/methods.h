// Methods of str, dict and list values callable from templates
// ("a,b".split(","), d.get("k"), d.items(), ...). Mutating methods exist but
// refuse to run, as in Jinja's ImmutableSandboxedEnvironment.
#pragma once
#include <string>

#include "jinja/value.h"

namespace qinfer::jinja {

// `self.name` as a bound callable, or Undefined when `self` has no such method.
Value bound_method(const Value& self, const std::string& name);

}  // namespace qinfer::jinja
