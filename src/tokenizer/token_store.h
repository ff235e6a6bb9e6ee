// The raw bytes of every token id in one arena, with an open-addressing index from bytes to
// id. Built once at load (about 250k tokens), then read-only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qinfer::tok {

class TokenStore {
 public:
  void reserve(size_t tokens, size_t bytes);
  // Sets the bytes of id (growing the id range as needed). When two ids have the same bytes,
  // find() gives the one set last (the higher id after a redefinition).
  void set(int id, std::string_view bytes);
  bool has(int id) const { return id >= 0 && id < size() && spans_[id].present; }
  std::string_view bytes(int id) const {
    const Span& s = spans_[id];
    return std::string_view(arena_).substr(s.offset, s.len);
  }
  std::optional<int> find(std::string_view bytes) const;
  int size() const { return static_cast<int>(spans_.size()); }  // highest id + 1

 private:
  struct Span {
    uint32_t offset = 0, len = 0;
    bool present = false;
  };
  struct Slot {
    uint32_t tag;  // high bits of the hash, checked before the bytes
    int32_t id;    // -1 = empty
  };
  size_t slot_of(std::string_view bytes, size_t hash) const;  // the slot holding bytes, or the empty one for it
  static size_t hash_of(std::string_view bytes);
  void rehash(size_t capacity);
  void index(int id);  // makes bytes(id) find id

  std::string arena_;
  std::vector<Span> spans_;
  std::vector<Slot> slots_ = std::vector<Slot>(16, Slot{0, -1});
  size_t used_ = 0;
};

}  // namespace qinfer::tok
