#include "util/json_parse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace qinfer {

namespace {

// Tracks where in the document the parser is, so a too-deep error can name the field.
// Only keys and array indices are kept: O(depth) memory, a few operations per event.
struct PathTracker {
  struct Frame {
    bool array;
    size_t next = 0, cur = 0;
    std::string key;
  };
  std::vector<Frame> frames;

  void element_starts() {
    if (!frames.empty() && frames.back().array) frames.back().cur = frames.back().next++;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames) {
      if (f.array) {
        p += "[" + std::to_string(f.cur) + "]";
      } else if (!f.key.empty() || &f != &frames.front()) {
        p += (p.empty() ? "" : ".") + f.key;
      }
    }
    return p;
  }
};

// True when some array or object in text opens at depth >= max_depth (the top-level value
// is at depth 0), counting brackets outside strings. A linear pass: the callback parser that
// can name the field is quadratic in an object's member count (nlohmann's callback parser
// scans the parent for discarded values at every end of a member object or array: 150 s of
// CPU for the 40-layer checkpoint's safetensors headers), so it only runs when this says
// the text is too deep. On malformed text the answer may be wrong either way; the parser
// that follows then reports the syntax error.
bool nested_deeper_than(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;   // the escaped character cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (depth >= max_depth) return true;
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

template <class J>
J parse_impl(std::string_view text, const std::string& source, int max_depth) {
  if (!nested_deeper_than(text, max_depth)) {
    try {
      return J::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
      throw JsonError(cat(source, ": malformed JSON: ", e.what()), "", false);
    }
  }
  // Too deep (or malformed in a way the scan misread): the slow parser names the field.
  PathTracker pt;
  bool deep = false;
  std::string deep_path;
  using event = nlohmann::detail::parse_event_t;
  typename J::parser_callback_t cb = [&](int depth, event ev, J& parsed) -> bool {
    switch (ev) {
      case event::object_start:
      case event::array_start:
        pt.element_starts();
        if (depth >= max_depth) {
          deep = true;
          deep_path = pt.path();
          throw std::length_error("depth");
        }
        pt.frames.push_back({ev == event::array_start, 0, 0, {}});
        break;
      case event::key:
        if (!pt.frames.empty()) pt.frames.back().key = parsed.template get<std::string>();
        break;
      case event::value:
        pt.element_starts();
        break;
      case event::object_end:
      case event::array_end:
        if (!pt.frames.empty()) pt.frames.pop_back();
        break;
    }
    return true;
  };
  try {
    return J::parse(text.begin(), text.end(), cb);
  } catch (const std::length_error&) {
    if (!deep) throw;
  } catch (const nlohmann::json::exception& e) {
    throw JsonError(cat(source, ": malformed JSON: ", e.what()), "", false);
  }
  std::string where = deep_path.empty() ? "" : cat(" at ", deep_path);
  throw JsonError(cat(source, ": JSON nested deeper than ", max_depth, " levels", where), deep_path, true);
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_impl<nlohmann::json>(text, source, max_depth);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_impl<nlohmann::ordered_json>(text, source, max_depth);
}

std::string read_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang; it is refused just below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file");
  }
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(got);
  return data;
}

nlohmann::json read_json_file(const std::string& path, int max_depth) {
  return parse_json(read_regular_file(path), path, max_depth);
}

nlohmann::ordered_json read_ordered_json_file(const std::string& path, int max_depth) {
  return parse_ordered_json(read_regular_file(path), path, max_depth);
}

std::string special_token_field(const nlohmann::ordered_json& cfg, const char* key, const std::string& file) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail(file, ": field '", key, "' must be a string, an object with \"content\", or null");
}

}  // namespace qinfer
