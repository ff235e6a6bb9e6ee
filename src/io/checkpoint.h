// A checkpoint folder: config.json plus one safetensors file or several shards
// listed by model.safetensors.index.json. All tensors are looked up by full name.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qinfer {

class Checkpoint {
 public:
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const TensorInfo* find(const std::string& name) const;   // nullptr if absent
  const TensorInfo& get(const std::string& name) const;    // Error "<dir>: tensor <name> is missing"
  bool has(const std::string& name) const { return find(name) != nullptr; }
  const std::map<std::string, const TensorInfo*>& all() const { return by_name_; }
  size_t total_bytes() const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> by_name_;
};

}  // namespace qinfer
