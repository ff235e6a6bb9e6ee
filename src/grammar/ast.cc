#include "grammar/ast.h"

#include "util/py_escape.h"

#include <algorithm>

namespace qinfer::grammar {

namespace {

Node node_of(Node::Kind k) {
  Node n;
  n.kind = k;
  return n;
}

NodePtr make(Node n) { return std::make_shared<const Node>(std::move(n)); }

}  // namespace

NodePtr nothing() {
  static const NodePtr n = make(node_of(Node::Kind::kNothing));
  return n;
}

NodePtr empty() {
  static const NodePtr n = make(node_of(Node::Kind::kEmpty));
  return n;
}

bool is_nothing(const NodePtr& n) { return n->kind == Node::Kind::kNothing; }

NodePtr byte_set(const ByteSet& s) {
  if (s.none()) return nothing();
  Node n = node_of(Node::Kind::kByte);
  n.set = s;
  return make(std::move(n));
}

NodePtr byte_range(uint8_t lo, uint8_t hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(size_t(b));
  return byte_set(s);
}

NodePtr literal(std::string_view bytes) {
  std::vector<NodePtr> kids;
  for (unsigned char c : bytes) kids.push_back(byte_range(c, c));
  return seq(std::move(kids));
}

NodePtr seq(std::vector<NodePtr> kids) {
  std::vector<NodePtr> out;
  for (auto& k : kids) {
    if (k->kind == Node::Kind::kNothing) return nothing();
    if (k->kind == Node::Kind::kEmpty) continue;
    if (k->kind == Node::Kind::kSeq) {
      out.insert(out.end(), k->kids.begin(), k->kids.end());
    } else {
      out.push_back(std::move(k));
    }
  }
  if (out.empty()) return empty();
  if (out.size() == 1) return out[0];
  Node n = node_of(Node::Kind::kSeq);
  n.kids = std::move(out);
  return make(std::move(n));
}

NodePtr alt(std::vector<NodePtr> kids) {
  std::vector<NodePtr> out;
  for (auto& k : kids) {
    if (k->kind == Node::Kind::kNothing) continue;
    if (k->kind == Node::Kind::kAlt) {
      out.insert(out.end(), k->kids.begin(), k->kids.end());
    } else {
      out.push_back(std::move(k));
    }
  }
  if (out.empty()) return nothing();
  if (out.size() == 1) return out[0];
  Node n = node_of(Node::Kind::kAlt);
  n.kids = std::move(out);
  return make(std::move(n));
}

NodePtr repeat(NodePtr kid, int min, int max) {
  if (max >= 0 && max < min) return nothing();
  if (kid->kind == Node::Kind::kNothing) return min == 0 ? empty() : nothing();
  if (kid->kind == Node::Kind::kEmpty || max == 0) return empty();
  if (min == 1 && max == 1) return kid;
  Node n = node_of(Node::Kind::kRepeat);
  n.kids = {std::move(kid)};
  n.min = min;
  n.max = max;
  return make(std::move(n));
}

NodePtr optional(NodePtr kid) { return repeat(std::move(kid), 0, 1); }

NodePtr props(std::vector<NodePtr> members, std::vector<bool> required, NodePtr sep) {
  std::vector<NodePtr> m;
  std::vector<bool> r;
  for (size_t i = 0; i < members.size(); ++i) {
    if (is_nothing(members[i])) {
      if (required[i]) return nothing();
      continue;
    }
    m.push_back(members[i]);
    r.push_back(required[i]);
  }
  if (m.empty()) return empty();
  Node n = node_of(Node::Kind::kProps);
  n.kids = std::move(m);
  n.required = std::move(r);
  n.sep = std::move(sep);
  return make(std::move(n));
}

CodeRanges normalise(CodeRanges r) {
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (auto [lo, hi] : r) {
    if (lo > hi) continue;
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

CodeRanges complement(const CodeRanges& in) {
  CodeRanges r = normalise(in);
  CodeRanges out;
  uint32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return subtract(out, {{0xD800, 0xDFFF}});
}

CodeRanges subtract(const CodeRanges& a, const CodeRanges& b) {
  CodeRanges out;
  CodeRanges bb = normalise(b);
  for (auto [lo, hi] : normalise(a)) {
    uint32_t cur = lo;
    bool live = true;
    for (auto [blo, bhi] : bb) {
      if (bhi < cur || blo > hi) continue;
      if (blo > cur) out.push_back({cur, blo - 1});
      if (bhi >= hi) {
        live = false;
        break;
      }
      cur = bhi + 1;
    }
    if (live && cur <= hi) out.push_back({cur, hi});
  }
  return out;
}

bool contains(const CodeRanges& r, uint32_t cp) {
  for (auto [lo, hi] : r)
    if (cp >= lo && cp <= hi) return true;
  return false;
}

namespace {

// The utf8-ranges split: [lo, hi] (same encoded length) into ranges whose every byte
// position is one contiguous byte range.
void split_same_length(uint32_t lo, uint32_t hi, int nbytes, std::vector<NodePtr>& out) {
  for (int i = 1; i < nbytes; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, nbytes, out);
        split_same_length((lo | m) + 1, hi, nbytes, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, nbytes, out);
        split_same_length(hi & ~m, hi, nbytes, out);
        return;
      }
    }
  }
  std::string a, b;  // same length: lo and hi lie in one UTF-8 length band
  append_utf8(a, lo);
  append_utf8(b, hi);
  std::vector<NodePtr> parts;
  for (size_t k = 0; k < a.size(); ++k) parts.push_back(byte_range(uint8_t(a[k]), uint8_t(b[k])));
  out.push_back(seq(std::move(parts)));
}

}  // namespace

NodePtr utf8_class(const CodeRanges& in) {
  const CodeRanges r = subtract(in, {{0xD800, 0xDFFF}});
  std::vector<NodePtr> out;
  ByteSet ascii;
  const uint32_t bounds[4][2] = {{0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, kMaxCodePoint}};
  for (auto [lo, hi] : r) {
    for (int n = 0; n < 4; ++n) {
      const uint32_t a = std::max(lo, bounds[n][0]), b = std::min(hi, bounds[n][1]);
      if (a > b) continue;
      if (n == 0) {
        for (uint32_t c = a; c <= b; ++c) ascii.set(c);
      } else {
        split_same_length(a, b, n + 1, out);
      }
    }
  }
  if (ascii.any()) out.insert(out.begin(), byte_set(ascii));
  return alt(std::move(out));
}

}  // namespace qinfer::grammar
