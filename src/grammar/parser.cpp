// The grammar text -> rule trees: a hand-written recursive-descent parser (docs/grammar.md).
#include "grammar/parser.h"

#include <algorithm>

#include "qwen3/error.h"
#include "tokenizer/utf8.h"

namespace qwen3::grammar {
namespace {

Node make(Node::Kind kind, size_t pos) {
  Node n;
  n.kind = kind;
  n.pos = pos;
  return n;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::vector<RuleDef> rules(std::vector<Grammar::Impl::TokenRef>& tokens) {
    tokens_ = &tokens;
    std::vector<RuleDef> out;
    skip();
    while (i_ < s_.size()) {
      const size_t pos = i_;
      std::string name = read_name();
      if (name.empty()) fail(pos, "expected a rule name");
      skip();
      if (s_.substr(i_, 3) != "::=") fail(i_, "expected '::=' after rule name '" + name + "'");
      i_ += 3;
      skip();
      out.push_back({name, alternatives(), pos});
      skip();
    }
    return out;
  }

  [[noreturn]] void fail(size_t pos, const std::string& message) const {
    syntax_error(s_, pos, message);
  }

 private:
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
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
    const size_t start = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // The next rule's "name ::=" starts here: the current rule has ended.
  bool at_rule_start() {
    const size_t saved = i_;
    const bool named = !read_name().empty();
    skip();
    const bool start = named && s_.substr(i_, 3) == "::=";
    i_ = saved;
    return start;
  }

  Node alternatives() {
    Node alt = make(Node::Kind::alt, i_);
    alt.kids.push_back(sequence());
    while (i_ < s_.size() && s_[i_] == '|') {
      ++i_;
      skip();
      alt.kids.push_back(sequence());
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Node sequence() {
    Node seq = make(Node::Kind::seq, i_);
    for (;;) {
      skip();
      if (i_ >= s_.size() || s_[i_] == '|' || s_[i_] == ')' || at_rule_start()) break;
      seq.kids.push_back(item());
    }
    if (seq.kids.size() == 1) return std::move(seq.kids[0]);
    return seq;
  }

  Node item() {
    Node node = primary();
    for (;;) {
      const size_t saved = i_;
      skip();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      int lo, hi;
      if (c == '*') {
        lo = 0, hi = -1;
        ++i_;
      } else if (c == '+') {
        lo = 1, hi = -1;
        ++i_;
      } else if (c == '?') {
        lo = 0, hi = 1;
        ++i_;
      } else if (c == '{') {
        const size_t pos = i_++;
        skip();
        lo = s_[i_] == ',' ? 0 : read_int();
        skip();
        if (s_[i_] == '}') {
          hi = lo;
        } else if (s_[i_] == ',') {
          ++i_;
          skip();
          hi = s_[i_] == '}' ? -1 : read_int();
          skip();
        } else {
          fail(i_, "expected ',' or '}' in a repetition");
        }
        if (s_[i_] != '}') fail(i_, "expected '}' to end a repetition");
        ++i_;
        if (hi >= 0 && hi < lo) fail(pos, "a repetition's maximum is below its minimum");
        if (lo > kMaxRepeat || hi > kMaxRepeat)
          fail(pos, "repetitions are limited to " + std::to_string(kMaxRepeat));
      } else {
        i_ = saved;
        break;
      }
      Node rep = make(Node::Kind::repeat, node.pos);
      rep.min = lo;
      rep.max = hi;
      rep.kids.push_back(std::move(node));
      node = std::move(rep);
    }
    return node;
  }

  int read_int() {
    const size_t start = i_;
    long value = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && value <= kMaxRepeat)
      value = value * 10 + (s_[i_++] - '0');
    if (i_ == start) fail(i_, "expected a number");
    if (value > kMaxRepeat) fail(start, "repetitions are limited to " + std::to_string(kMaxRepeat));
    return int(value);
  }

  Node primary() {
    const size_t pos = i_;
    if (i_ >= s_.size()) fail(pos, "unexpected end of grammar");
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      Node lit = make(Node::Kind::literal, pos);
      while (i_ < s_.size() && s_[i_] != '"') detail::append_utf8(read_char(), lit.text);
      if (i_ >= s_.size()) fail(pos, "unterminated literal");
      ++i_;
      return lit;
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      Node any = make(Node::Kind::cls, pos);
      any.ranges = {{0, kMaxCodePoint}};
      return any;
    }
    if (c == '(') {
      ++i_;
      skip();
      Node inner = alternatives();
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') fail(pos, "unclosed '('");
      ++i_;
      return inner;
    }
    if (c == '<') return token();
    std::string name = read_name();
    if (name.empty()) fail(pos, std::string("unexpected '") + c + "'");
    Node ref = make(Node::Kind::ref, pos);
    ref.text = std::move(name);
    return ref;
  }

  Node token() {
    const size_t pos = i_;
    const size_t close = s_.find('>', i_ + 1);
    if (close == std::string_view::npos) fail(pos, "unterminated token reference '<...>'");
    std::string_view inside = s_.substr(i_ + 1, close - i_ - 1);
    i_ = close + 1;
    Grammar::Impl::TokenRef ref;
    if (inside.size() > 2 && inside.front() == '[' && inside.back() == ']') {
      long id = 0;
      for (char d : inside.substr(1, inside.size() - 2)) {
        if (d < '0' || d > '9' || id > (1L << 30)) fail(pos, "a token id <[N]> must be a number");
        id = id * 10 + (d - '0');
      }
      ref.id = int32_t(id);
    } else {
      if (inside.empty() || inside.find_first_of(" \t\r\n<") != std::string_view::npos)
        fail(pos, "a token reference is <name> without spaces, or <[id]>");
      ref.name = "<" + std::string(inside) + ">";
    }
    auto& tokens = *tokens_;
    auto it = std::find_if(tokens.begin(), tokens.end(),
                           [&](auto& t) { return t.name == ref.name && t.id == ref.id; });
    if (it == tokens.end()) it = tokens.insert(tokens.end(), ref);
    Node node = make(Node::Kind::token, pos);
    node.index = int32_t(it - tokens.begin());
    return node;
  }

  // One character of a literal or class: an escape, or one UTF-8 encoded code point.
  uint32_t read_char() {
    const size_t pos = i_;
    const auto c = static_cast<unsigned char>(s_[i_++]);
    if (c == '\\') {
      if (i_ >= s_.size()) fail(pos, "unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case 'x': return read_hex(2, pos);
        case 'u': return read_hex(4, pos);
        case 'U': return read_hex(8, pos);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'': return uint32_t(e);
        default: fail(pos, std::string("unknown escape '\\") + e + "'");
      }
    }
    if (c < 0x80) return c;
    const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (extra < 0 || c > 0xF4 || i_ + size_t(extra) > s_.size())
      fail(pos, "invalid UTF-8 in the grammar");
    uint32_t cp = c & (0x3F >> extra);
    for (int k = 0; k < extra; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_++]);
      if ((b & 0xC0) != 0x80) fail(pos, "invalid UTF-8 in the grammar");
      cp = cp << 6 | (b & 0x3F);
    }
    return cp;
  }

  uint32_t read_hex(int digits, size_t pos) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (i_ >= s_.size()) fail(pos, "incomplete hex escape");
      const char h = s_[i_++];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) fail(pos, "bad hex digit in an escape");
      v = v * 16 + uint32_t(d);
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF))
      fail(pos, "escape is not a Unicode scalar value");
    return v;
  }

  Node char_class() {
    const size_t pos = i_++;
    bool negated = false;
    if (i_ < s_.size() && s_[i_] == '^') {
      negated = true;
      ++i_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (i_ < s_.size() && s_[i_] != ']') {
      const uint32_t lo = read_char();
      uint32_t hi = lo;
      if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
        ++i_;
        hi = read_char();
        if (hi < lo) fail(pos, "a class range ends below its start");
      }
      ranges.push_back({lo, hi});
    }
    if (i_ >= s_.size()) fail(pos, "unterminated character class");
    ++i_;
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (auto r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    if (negated) {
      std::vector<std::pair<uint32_t, uint32_t>> complement;
      uint32_t next = 0;
      for (auto r : merged) {
        if (r.first > next) complement.push_back({next, r.first - 1});
        next = r.second + 1;
      }
      if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
      merged = std::move(complement);
    }
    Node cls = make(Node::Kind::cls, pos);
    cls.ranges = std::move(merged);
    return cls;
  }

  std::string_view s_;
  size_t i_ = 0;
  std::vector<Grammar::Impl::TokenRef>* tokens_ = nullptr;
};

}  // namespace

void syntax_error(std::string_view text, size_t pos, const std::string& message) {
  size_t line = 1, col = 1;
  for (size_t k = 0; k < pos && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  throw Error(ErrorKind::invalid_argument,
              "grammar " + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
}

std::vector<RuleDef> parse_rules(std::string_view text,
                                 std::vector<Grammar::Impl::TokenRef>& tokens) {
  return Parser(text).rules(tokens);
}

}  // namespace qwen3::grammar
