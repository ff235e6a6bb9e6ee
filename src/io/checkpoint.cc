#include "io/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"
#include "util/json_parse.h"
#include "util/log.h"

namespace qinfer {

namespace fs = std::filesystem;

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto ck = std::unique_ptr<Checkpoint>(new Checkpoint());
  ck->dir_ = dir;
  if (!fs::is_directory(dir)) fail(dir, ": not a checkpoint folder (no such directory)");
  std::vector<std::string> files;
  std::map<std::string, std::string> index;  // tensor -> file, from the index
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    nlohmann::json j = read_json_file(index_path.string());
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      fail(index_path.string(), ": missing key weight_map");
    std::set<std::string> seen;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) fail(index_path.string(), ": weight_map entry ", it.key(), " is not a file name");
      std::string f = it->get<std::string>();
      if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        fail(index_path.string(), ": weight_map entry ", it.key(), " names a file outside the folder: ", f);
      index[it.key()] = f;
      if (seen.insert(f).second) files.push_back(f);
    }
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    files.push_back("model.safetensors");
  } else {
    fail(dir, ": no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& f : files) {
    std::string path = (fs::path(dir) / f).string();
    if (!fs::exists(path)) fail(path, ": shard listed in model.safetensors.index.json is missing");
    ck->files_.push_back(std::make_unique<SafetensorsFile>(path));
  }
  for (const auto& file : ck->files_) {
    for (const auto& t : file->tensors()) {
      auto [it, inserted] = ck->by_name_.emplace(t.name, &t);
      if (!inserted) fail(t.file, ": tensor ", t.name, " is also in ", it->second->file);
      if (!index.empty()) {
        auto ix = index.find(t.name);
        if (ix == index.end()) log_warn(t.file, ": tensor ", t.name, " is not listed in the index");
      }
    }
  }
  for (const auto& [name, f] : index)
    if (!ck->by_name_.count(name))
      fail((fs::path(dir) / f).string(), ": tensor ", name, " listed in the index is not in the file");
  return ck;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorInfo& Checkpoint::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) fail(dir_, ": tensor ", name, " is missing");
  return *t;
}

size_t Checkpoint::total_bytes() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->file_size();
  return n;
}

}  // namespace qinfer
