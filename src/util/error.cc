#include "util/error.h"

namespace qinfer {

std::string str_cat_impl(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

}  // namespace qinfer
