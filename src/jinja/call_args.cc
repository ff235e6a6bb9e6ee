// Args: Python-style binding of positional/keyword arguments for builtins.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {

Args::Args(const CallArgs& a, std::string what, std::vector<std::string> names)
    : what_(std::move(what)), names_(std::move(names)), vals_(names_.size()), set_(names_.size(), false) {
  if (a.pos.size() > names_.size())
    throw EvalError(cat("TypeError: ", what_, " takes at most ", names_.size(), " argument(s), ",
                        a.pos.size(), " given"));
  for (size_t i = 0; i < a.pos.size(); ++i) {
    vals_[i] = a.pos[i];
    set_[i] = true;
  }
  for (const auto& [k, v] : a.kw) {
    auto it = std::find(names_.begin(), names_.end(), k);
    if (it == names_.end())
      throw EvalError(cat("TypeError: ", what_, " got an unexpected keyword argument '", k, "'"));
    size_t idx = static_cast<size_t>(it - names_.begin());
    if (set_[idx]) throw EvalError(cat("TypeError: ", what_, " got multiple values for argument '", k, "'"));
    vals_[idx] = v;
    set_[idx] = true;
  }
}

std::string Args::str(size_t i) const {
  if (!vals_[i].is_string())
    throw EvalError(cat("TypeError: ", what_, ": argument '", names_[i], "' must be str, not ",
                        type_name(vals_[i])));
  return vals_[i].str();
}

int64_t Args::integer(size_t i) const {
  if (!vals_[i].is_int() && !vals_[i].is_bool())
    throw EvalError(cat("TypeError: ", what_, ": argument '", names_[i], "' must be int, not ",
                        type_name(vals_[i])));
  return vals_[i].as_int();
}

bool Args::boolean(size_t i) const { return truthy(vals_[i]); }

}  // namespace qinfer::jinja
