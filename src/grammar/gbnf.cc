#include "grammar/gbnf.h"

#include <map>
#include <string>

#include "grammar/regex.h"

namespace qinfer::grammar {

namespace {

// Parsed GBNF expression (before rule references are expanded).
struct Expr {
  enum class Kind { kNode, kRef, kSeq, kAlt, kRepeat } kind = Kind::kNode;
  NodePtr node;
  std::string ref;
  size_t at = 0;
  std::vector<Expr> kids;
  int min = 0, max = -1;
};

bool name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

class GbnfParser {
 public:
  GbnfParser(std::string_view s, std::string_view where) : s_(s), where_(where) {}

  void parse() {
    skip();
    while (i_ < s_.size()) {
      const size_t at = i_;
      std::string name = read_name();
      if (name.empty()) bad(at, "expected a rule name");
      skip();
      if (s_.substr(i_, 3) != "::=") bad(i_, "expected '::=' after rule name '" + name + "'");
      i_ += 3;
      skip();
      if (rules_.count(name)) bad(at, "rule '" + name + "' is defined twice");
      rules_[name] = parse_alt();
      skip();
    }
    if (!rules_.count("root")) throw GrammarError(std::string(where_) + ": the grammar has no 'root' rule");
    for (const auto& [n, e] : rules_) check_refs(e);
  }

  NodePtr expand(int max_depth) {
    max_depth_ = max_depth;
    expansions_ = 0;
    return expand_ref("root", 0);
  }

 private:
  [[noreturn]] void bad(size_t at, const std::string& what) const {
    throw GrammarError(std::string(where_) + ": " + what + " at offset " + std::to_string(at));
  }

  void skip() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  // At a rule name followed by ::= (the start of the next rule).
  bool at_rule_start() {
    const size_t save = i_;
    std::string n = read_name();
    skip();
    const bool yes = !n.empty() && s_.substr(i_, 3) == "::=";
    i_ = save;
    return yes;
  }

  Expr parse_alt() {
    Expr a; a.kind = Expr::Kind::kAlt;
    a.kids.push_back(parse_seq());
    while (i_ < s_.size() && s_[i_] == '|') {
      ++i_;
      skip();
      a.kids.push_back(parse_seq());
    }
    return a.kids.size() == 1 ? a.kids[0] : a;
  }

  Expr parse_seq() {
    Expr q; q.kind = Expr::Kind::kSeq;
    while (i_ < s_.size() && s_[i_] != '|' && s_[i_] != ')') {
      if (at_rule_start()) break;
      q.kids.push_back(parse_postfix(parse_atom()));
      skip();
    }
    return q;
  }

  Expr parse_postfix(Expr e) {
    for (;;) {
      if (i_ >= s_.size()) return e;
      const char c = s_[i_];
      int mn = 0, mx = -1;
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        mn = 1;
        ++i_;
      } else if (c == '?') {
        mx = 1;
        ++i_;
      } else if (c == '{') {
        const size_t at = i_++;
        auto num = [&](int& v) {
          skip();
          const size_t b = i_;
          long x = 0;
          while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') x = std::min(100000L, x * 10 + (s_[i_++] - '0'));
          v = int(x);
          skip();
          return i_ > b;
        };
        if (!num(mn)) bad(at, "expected a number in {m,n}");
        mx = mn;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          if (!num(mx)) mx = -1;
        }
        if (i_ >= s_.size() || s_[i_] != '}') bad(at, "unterminated {m,n}");
        ++i_;
        if (mn > kMaxRepeat || mx > kMaxRepeat) bad(at, "repeat count above 1000");
        if (mx >= 0 && mx < mn) bad(at, "repeat {m,n} with n < m");
      } else {
        return e;
      }
      Expr r; r.kind = Expr::Kind::kRepeat;
      r.kids.push_back(std::move(e));
      r.min = mn;
      r.max = mx;
      e = std::move(r);
    }
  }

  Expr parse_atom() {
    const size_t at = i_;
    const char c = s_[i_];
    Expr e;
    e.at = at;
    if (c == '"') {
      ++i_;
      std::vector<NodePtr> parts;
      while (true) {
        if (i_ >= s_.size()) bad(at, "unterminated string literal");
        if (s_[i_] == '"') {
          ++i_;
          break;
        }
        CodeRanges cp;
        if (s_[i_] == '\\') {
          ++i_;
          if (i_ >= s_.size()) bad(at, "unterminated string literal");
          cp = parse_escape(s_, i_, where_, true);
        } else {
          const uint32_t v = next_code_point(s_, i_, where_);
          cp = {{v, v}};
        }
        parts.push_back(utf8_class(cp));
      }
      e.node = seq(std::move(parts));
      return e;
    }
    if (c == '[') {
      ++i_;
      e.node = utf8_class(parse_class(s_, i_, where_));
      return e;
    }
    if (c == '.') {
      ++i_;
      e.node = utf8_class(complement({}));
      return e;
    }
    if (c == '(') {
      ++i_;
      skip();
      Expr inner = parse_alt();
      if (i_ >= s_.size() || s_[i_] != ')') bad(at, "unbalanced '('");
      ++i_;
      return inner;
    }
    if (name_char(c)) {
      e.kind = Expr::Kind::kRef;
      e.ref = read_name();
      return e;
    }
    bad(at, std::string("unexpected character '") + c + "'");
  }

  void check_refs(const Expr& e) const {
    if (e.kind == Expr::Kind::kRef && !rules_.count(e.ref)) bad(e.at, "undefined rule '" + e.ref + "'");
    for (const auto& k : e.kids) check_refs(k);
  }

  NodePtr expand_ref(const std::string& name, size_t) {
    if (++expansions_ > 100000) throw GrammarError(std::string(where_) + ": grammar too large after unrolling recursion");
    int& d = depth_[name];
    if (d >= max_depth_) return nothing();
    ++d;
    NodePtr n = to_node(rules_.at(name));
    --d;
    return n;
  }

  NodePtr to_node(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kNode: return e.node;
      case Expr::Kind::kRef: return expand_ref(e.ref, e.at);
      case Expr::Kind::kSeq: {
        std::vector<NodePtr> k;
        for (const auto& x : e.kids) {
          k.push_back(to_node(x));
          if (is_nothing(k.back())) return nothing();
        }
        return seq(std::move(k));
      }
      case Expr::Kind::kAlt: {
        std::vector<NodePtr> k;
        for (const auto& x : e.kids) k.push_back(to_node(x));
        return alt(std::move(k));
      }
      case Expr::Kind::kRepeat: return repeat(to_node(e.kids[0]), e.min, e.max);
    }
    return nothing();
  }

  std::string_view s_;
  std::string_view where_;
  size_t i_ = 0;
  std::map<std::string, Expr> rules_;
  std::map<std::string, int> depth_;
  int max_depth_ = kMaxGbnfDepth;
  long expansions_ = 0;
};

}  // namespace

NodePtr gbnf_grammar(std::string_view text, std::string_view where, int max_depth) {
  GbnfParser p(text, where);
  p.parse();
  NodePtr n = p.expand(max_depth);
  if (is_nothing(n)) throw GrammarError(std::string(where) + ": the grammar matches no string (within the recursion bound)");
  return n;
}

}  // namespace qinfer::grammar
