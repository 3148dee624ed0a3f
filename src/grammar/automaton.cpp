// Grammar text -> syntax tree -> one NFA per rule -> one DFA per rule (subset construction), then
// the checks that keep the matcher finite: no left recursion, no repetition of an empty match.
#include "grammar/automaton.h"
#include "grammar/parser.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "qwen3/error.h"
#include "tokenizer/utf8.h"

namespace qwen3 {
namespace grammar {
namespace {

constexpr size_t kMaxNfaStates = 1'000'000;  // ~100 MB while compiling

// Thompson construction. A symbol is a rule index (>= 0) or -(token index + 1).
struct Nfa {
  struct State {
    std::vector<int32_t> eps;
    std::vector<std::array<int32_t, 3>> ranges;  // {lo, hi, target}
    std::vector<std::pair<int32_t, int32_t>> symbols;
  };
  std::vector<State> states;
  const std::vector<RuleDef>* rules = nullptr;
  std::vector<uint8_t> inlined;  // [rules] references to it are built in place...
  int in_long_repeat = 0;        // ...except inside a repetition of more than 8 copies
  std::vector<uint8_t> needed;  // [rules] referenced as a symbol somewhere: needs its own automaton

  int32_t add() {
    if (states.size() >= kMaxNfaStates)
      throw Error(ErrorKind::invalid_argument,
                  "grammar: too large (over 1M automaton states before determinizing)");
    states.emplace_back();
    return int32_t(states.size() - 1);
  }

  // Adds `node` starting at state `from`; returns its end state. Never adds an edge into `from`,
  // so sequences may chain without fresh start states.
  int32_t build(const Node& node, int32_t from) {
    switch (node.kind) {
      case Node::Kind::literal: {
        int32_t cur = from;
        for (unsigned char b : node.text) {
          const int32_t next = add();
          states[size_t(cur)].ranges.push_back({b, b, next});
          cur = next;
        }
        return cur;
      }
      case Node::Kind::cls: {
        const int32_t end = add();
        std::vector<ByteRanges> sequences;
        for (auto [lo, hi] : node.ranges) utf8_sequences(lo, hi, sequences);
        for (auto& seq : sequences) {
          int32_t cur = from;
          for (size_t k = 0; k < seq.size(); ++k) {
            const int32_t next = k + 1 == seq.size() ? end : add();
            states[size_t(cur)].ranges.push_back({seq[k].first, seq[k].second, next});
            cur = next;
          }
        }
        return end;
      }
      case Node::Kind::ref:
        if (inlined[size_t(node.index)] && in_long_repeat == 0)
          return build((*rules)[size_t(node.index)].body, from);
        if (!needed.empty()) needed[size_t(node.index)] = 1;
        [[fallthrough]];
      case Node::Kind::token: {
        const int32_t end = add();
        states[size_t(from)].symbols.push_back(
            {node.kind == Node::Kind::ref ? node.index : -(node.index + 1), end});
        return end;
      }
      case Node::Kind::seq: {
        int32_t cur = from;
        for (auto& kid : node.kids) cur = build(kid, cur);
        return cur;
      }
      case Node::Kind::alt: {
        const int32_t end = add();
        for (auto& kid : node.kids) {
          const int32_t start = add();
          states[size_t(from)].eps.push_back(start);
          states[size_t(build(kid, start))].eps.push_back(end);
        }
        return end;
      }
      case Node::Kind::repeat: {
        // Copies of a long bounded repetition keep their references as references: an array of
        // up to 1000 values built in place would take a hundred states per value.
        struct LongRepeat {
          int& depth;
          bool on;
          LongRepeat(int& d, bool o) : depth(d), on(o) { depth += on; }
          ~LongRepeat() { depth -= on; }
        } guard(in_long_repeat, node.min > 8 || node.max > 8);
        const Node& kid = node.kids[0];
        int32_t cur = from;
        for (int k = 0; k < node.min; ++k) {
          const int32_t start = add();
          states[size_t(cur)].eps.push_back(start);
          cur = build(kid, start);
        }
        const int32_t end = add();
        if (node.max < 0) {
          const int32_t loop = add();
          states[size_t(cur)].eps.push_back(loop);
          states[size_t(build(kid, loop))].eps.push_back(loop);
          states[size_t(loop)].eps.push_back(end);
          return end;
        }
        for (int k = node.min; k < node.max; ++k) {
          states[size_t(cur)].eps.push_back(end);
          const int32_t start = add();
          states[size_t(cur)].eps.push_back(start);
          cur = build(kid, start);
        }
        states[size_t(cur)].eps.push_back(end);
        return end;
      }
    }
    return from;
  }
};

void resolve(Node& node, const std::unordered_map<std::string, int32_t>& index,
             std::string_view text, std::vector<int32_t>& uses) {
  if (node.kind == Node::Kind::ref) {
    auto it = index.find(node.text);
    if (it == index.end()) syntax_error(text, node.pos, "undefined rule '" + node.text + "'");
    node.index = it->second;
    uses.push_back(it->second);
  }
  for (auto& kid : node.kids) resolve(kid, index, text, uses);
}

// Which rules are built in place where they are used: those that cannot reach themselves, and
// are small once their own such references are built in place. A rule's automaton then covers
// what it writes through them (a JSON object with its strings and numbers), so far fewer tokens
// leave a rule part-way and need the stack below to be checked (see matcher.cpp).
void choose_inlined(const std::vector<RuleDef>& defs, const std::vector<std::vector<int32_t>>& uses,
                    int32_t root, Nfa& nfa) {
  constexpr size_t kInlineStates = 4096;
  const size_t rules = defs.size();
  std::vector<uint8_t> recursive(rules, 0);
  for (size_t r = 0; r < rules; ++r) {
    std::vector<int32_t> todo(uses[r].begin(), uses[r].end());
    std::vector<uint8_t> seen(rules, 0);
    while (!todo.empty() && !recursive[r]) {
      const auto u = size_t(todo.back());
      todo.pop_back();
      if (u == r) recursive[r] = 1;
      if (seen[u]) continue;
      seen[u] = 1;
      todo.insert(todo.end(), uses[u].begin(), uses[u].end());
    }
  }
  nfa.rules = &defs;
  nfa.inlined.assign(rules, 0);
  std::vector<uint8_t> decided(rules, 0);
  auto decide = [&](auto&& self, size_t r) -> void {
    if (decided[r]) return;
    decided[r] = 1;
    for (int32_t u : uses[r])
      if (!recursive[size_t(u)]) self(self, size_t(u));
    if (recursive[r] || int32_t(r) == root) return;
    Nfa scratch;
    scratch.rules = &defs;
    scratch.inlined = nfa.inlined;
    scratch.build(defs[r].body, scratch.add());
    nfa.inlined[r] = scratch.states.size() <= kInlineStates;
  };
  for (size_t r = 0; r < rules; ++r) decide(decide, r);
}

class Determinizer {
 public:
  Determinizer(const Nfa& nfa, Grammar::Impl& g, size_t max_states)
      : nfa_(nfa), g_(g), max_states_(max_states) {}

  // Adds the DFA of one rule (NFA from start to accept) and returns its start state.
  int32_t add_rule(int32_t start, int32_t accept) {
    accept_ = accept;
    ids_.clear();
    pending_.clear();
    const int32_t first = id_of(closure({start}));
    while (!pending_.empty()) {
      auto [set, id] = std::move(pending_.back());
      pending_.pop_back();
      expand(set, id);
    }
    return first;
  }

  // Symbol edges per state, kept aside until every rule is built.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> symbols;

 private:
  std::vector<int32_t> closure(std::vector<int32_t> set) const {
    std::vector<int32_t> stack = set;
    std::vector<int32_t> out;
    // A stamp per NFA state instead of clearing a flag array per call.
    if (stamp_.size() < nfa_.states.size()) stamp_.resize(nfa_.states.size(), 0);
    const uint32_t mark = ++generation_;
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      if (stamp_[size_t(s)] == mark) continue;
      stamp_[size_t(s)] = mark;
      out.push_back(s);
      for (int32_t e : nfa_.states[size_t(s)].eps) stack.push_back(e);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  int32_t id_of(std::vector<int32_t> set) {
    auto it = ids_.find(set);
    if (it != ids_.end()) return it->second;
    const auto id = int32_t(g_.accepting.size());
    if (size_t(id) >= max_states_)
      throw Error(ErrorKind::invalid_argument,
                  "grammar: too large (over " + std::to_string(max_states_) + " automaton states)");
    g_.accepting.push_back(std::binary_search(set.begin(), set.end(), accept_));
    g_.next.resize(g_.next.size() + 256, -1);
    symbols.emplace_back();
    ids_.emplace(set, id);
    pending_.push_back({std::move(set), id});
    return id;
  }

  void expand(const std::vector<int32_t>& set, int32_t id) {
    // Bytes: split 0..255 where any range starts or ends, so each piece has one target set.
    std::vector<int> cuts{0, 256};
    std::map<int32_t, std::vector<int32_t>> by_symbol;
    for (int32_t s : set) {
      for (auto& r : nfa_.states[size_t(s)].ranges) {
        cuts.push_back(r[0]);
        cuts.push_back(r[1] + 1);
      }
      for (auto [symbol, target] : nfa_.states[size_t(s)].symbols)
        by_symbol[symbol].push_back(target);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const int b = cuts[k];
      std::vector<int32_t> targets;
      for (int32_t s : set)
        for (auto& r : nfa_.states[size_t(s)].ranges)
          if (r[0] <= b && b <= r[1]) targets.push_back(r[2]);
      if (targets.empty()) continue;
      const int32_t to = id_of(closure(std::move(targets)));
      for (int c = b; c < cuts[k + 1]; ++c) g_.next[size_t(id) * 256 + size_t(c)] = to;
    }
    for (auto& [symbol, targets] : by_symbol) {
      const int32_t to = id_of(closure(std::move(targets)));
      symbols[size_t(id)].push_back({symbol, to});
    }
  }

  const Nfa& nfa_;
  Grammar::Impl& g_;
  size_t max_states_;
  int32_t accept_ = -1;
  std::map<std::vector<int32_t>, int32_t> ids_;
  std::vector<std::pair<std::vector<int32_t>, int32_t>> pending_;
  mutable std::vector<uint32_t> stamp_;
  mutable uint32_t generation_ = 0;
};

// Marks nullable rules, then states that can finish their rule without consuming anything.
void completion(Grammar::Impl& g, std::vector<uint8_t>& nullable) {
  const size_t rules = g.rule_start.size();
  nullable.assign(rules, 0);
  g.can_complete = g.accepting;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t q = 0; q < g.states(); ++q) {
      if (g.can_complete[q]) continue;
      for (uint32_t k = g.ref_begin[q]; k < g.ref_begin[q + 1]; ++k) {
        const auto& e = g.refs[k];
        if (nullable[size_t(e.symbol)] && g.can_complete[size_t(e.target)]) {
          g.can_complete[q] = 1;
          changed = true;
          break;
        }
      }
    }
    for (size_t r = 0; r < rules; ++r) {
      if (!nullable[r] && g.can_complete[size_t(g.rule_start[r])]) {
        nullable[r] = 1;
        changed = true;
      }
    }
  }
}

// Rejects what would make a step loop forever: a rule that can begin with itself (left
// recursion), and a cycle of references to rules that can match nothing.
void check_termination(const Grammar::Impl& g, const std::vector<uint8_t>& nullable,
                       const std::vector<int32_t>& state_rule) {
  const size_t rules = g.rule_start.size();
  auto fail = [&](const std::string& message) {
    throw Error(ErrorKind::invalid_argument, "grammar: " + message);
  };
  // State graph of empty moves: q -> target over a reference to a nullable rule.
  std::vector<uint8_t> color(g.states(), 0);
  std::vector<std::pair<size_t, uint32_t>> stack;
  for (size_t root = 0; root < g.states(); ++root) {
    if (color[root]) continue;
    stack.push_back({root, g.ref_begin[root]});
    color[root] = 1;
    while (!stack.empty()) {
      auto& [q, k] = stack.back();
      if (k == g.ref_begin[q + 1]) {
        color[q] = 2;
        stack.pop_back();
        continue;
      }
      const auto& e = g.refs[k++];
      if (!nullable[size_t(e.symbol)]) continue;
      const auto t = size_t(e.target);
      if (color[t] == 1)
        fail("rule '" + g.rule_names[size_t(state_rule[q])] + "' repeats '" +
             g.rule_names[size_t(e.symbol)] + "', which can match nothing");
      if (color[t] == 0) {
        color[t] = 1;
        stack.push_back({t, g.ref_begin[t]});
      }
    }
  }
  // Rule graph: A -> B when A can reference B before consuming anything.
  std::vector<std::vector<int32_t>> begins(rules);
  for (size_t r = 0; r < rules; ++r) {
    std::vector<int32_t> todo{g.rule_start[r]};
    std::vector<uint8_t> seen(g.states(), 0);
    while (!todo.empty()) {
      const auto q = size_t(todo.back());
      todo.pop_back();
      if (seen[q]) continue;
      seen[q] = 1;
      for (uint32_t k = g.ref_begin[q]; k < g.ref_begin[q + 1]; ++k) {
        begins[r].push_back(g.refs[k].symbol);
        if (nullable[size_t(g.refs[k].symbol)]) todo.push_back(g.refs[k].target);
      }
    }
  }
  std::vector<uint8_t> rule_color(rules, 0);
  std::vector<std::pair<size_t, size_t>> rstack;
  for (size_t root = 0; root < rules; ++root) {
    if (rule_color[root]) continue;
    rstack.push_back({root, 0});
    rule_color[root] = 1;
    while (!rstack.empty()) {
      auto& [r, k] = rstack.back();
      if (k == begins[r].size()) {
        rule_color[r] = 2;
        rstack.pop_back();
        continue;
      }
      const auto next = size_t(begins[r][k++]);
      if (rule_color[next] == 1) fail("rule '" + g.rule_names[next] + "' is left-recursive");
      if (rule_color[next] == 0) {
        rule_color[next] = 1;
        rstack.push_back({next, 0});
      }
    }
  }
}

// Merges states whose rows are the same (accepting, byte targets, references, tokens), pass after
// pass: "x*" comes back to one state after each x, a character's partial UTF-8
// states merge across positions, and every state left is one more cache entry to fill. Cheaper
// than full minimization (Moore's rounds grow with a bounded repetition's length) and always sound.
void minimize(Grammar::Impl& g) {
  const size_t n = g.states();
  // Bytes that every state treats alike are compared once.
  std::vector<int> representatives;
  {
    std::unordered_map<std::string, int> columns;
    std::string column(n * 4, '\0');
    for (int b = 0; b < 256; ++b) {
      for (size_t q = 0; q < n; ++q) std::memcpy(&column[q * 4], &g.next[q * 256 + size_t(b)], 4);
      if (columns.emplace(column, b).second) representatives.push_back(b);
    }
  }
  std::vector<int32_t> cls(n);
  for (size_t q = 0; q < n; ++q) cls[q] = int32_t(q);
  size_t count = n;
  // Each pass's partition is sound on its own, so a few passes do: further ones only fold the
  // positions of a long bounded repetition, one per pass.
  for (int pass = 0; pass < 16; ++pass) {
    std::unordered_map<std::string, int32_t> ids;
    std::vector<int32_t> refined(n);
    std::vector<int32_t> sig;
    for (size_t q = 0; q < n; ++q) {
      sig.assign(1, g.accepting[q]);
      for (int b : representatives) {
        const int32_t t = g.next[q * 256 + size_t(b)];
        sig.push_back(t < 0 ? -1 : cls[size_t(t)]);
      }
      sig.push_back(-2);
      for (uint32_t k = g.ref_begin[q]; k < g.ref_begin[q + 1]; ++k)
        sig.insert(sig.end(), {g.refs[k].symbol, cls[size_t(g.refs[k].target)]});
      sig.push_back(-3);
      for (uint32_t k = g.token_begin[q]; k < g.token_begin[q + 1]; ++k)
        sig.insert(sig.end(), {g.token_edges[k].symbol, cls[size_t(g.token_edges[k].target)]});
      std::string key(reinterpret_cast<const char*>(sig.data()), sig.size() * sizeof(int32_t));
      refined[q] = ids.emplace(std::move(key), int32_t(ids.size())).first->second;
    }
    cls = std::move(refined);
    if (ids.size() == count) break;
    count = ids.size();
  }
  std::vector<int32_t> representative(count, -1);
  for (size_t q = 0; q < n; ++q)
    if (representative[size_t(cls[q])] < 0) representative[size_t(cls[q])] = int32_t(q);
  Grammar::Impl m;
  m.next.assign(count * 256, -1);
  m.accepting.resize(count);
  m.ref_begin.assign(1, 0);
  m.token_begin.assign(1, 0);
  for (size_t c = 0; c < count; ++c) {
    const auto q = size_t(representative[c]);
    for (size_t b = 0; b < 256; ++b) {
      const int32_t t = g.next[q * 256 + b];
      m.next[c * 256 + b] = t < 0 ? -1 : cls[size_t(t)];
    }
    m.accepting[c] = g.accepting[q];
    for (uint32_t k = g.ref_begin[q]; k < g.ref_begin[q + 1]; ++k)
      m.refs.push_back({g.refs[k].symbol, cls[size_t(g.refs[k].target)]});
    for (uint32_t k = g.token_begin[q]; k < g.token_begin[q + 1]; ++k)
      m.token_edges.push_back({g.token_edges[k].symbol, cls[size_t(g.token_edges[k].target)]});
    m.ref_begin.push_back(uint32_t(m.refs.size()));
    m.token_begin.push_back(uint32_t(m.token_edges.size()));
  }
  for (auto& start : g.rule_start) start = cls[size_t(start)];
  g.next = std::move(m.next);
  g.accepting = std::move(m.accepting);
  g.refs = std::move(m.refs);
  g.ref_begin = std::move(m.ref_begin);
  g.token_edges = std::move(m.token_edges);
  g.token_begin = std::move(m.token_begin);
}

// The byte table with one column per class of bytes that every state treats alike.
void compress(Grammar::Impl& g) {
  const size_t n = g.states();
  std::unordered_map<std::string, uint8_t> index;
  std::vector<int> first_byte;  // per class, a byte of it
  std::string column(n * 4, '\0');
  for (int b = 0; b < 256; ++b) {
    for (size_t q = 0; q < n; ++q) std::memcpy(&column[q * 4], &g.next[q * 256 + size_t(b)], 4);
    auto [it, added] = index.emplace(column, uint8_t(first_byte.size()));
    if (added) first_byte.push_back(b);
    g.byte_class[b] = it->second;
  }
  g.classes = first_byte.size();
  std::vector<int32_t> next(n * g.classes);
  for (size_t q = 0; q < n; ++q)
    for (size_t c = 0; c < g.classes; ++c)
      next[q * g.classes + c] = g.next[q * 256 + size_t(first_byte[c])];
  g.next = std::move(next);
}

}  // namespace

void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, out);
    return;
  }
  static constexpr uint32_t kLast[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t last : kLast) {
    if (lo <= last && hi > last) {
      utf8_sequences(lo, last, out);
      utf8_sequences(last + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back({{uint8_t(lo), uint8_t(hi)}});
    return;
  }
  const int len = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
  for (int k = 1; k < len; ++k) {
    const uint32_t m = (1u << (6 * k)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  detail::append_utf8(lo, a);
  detail::append_utf8(hi, b);
  ByteRanges seq;
  for (size_t k = 0; k < a.size(); ++k) seq.push_back({uint8_t(a[k]), uint8_t(b[k])});
  out.push_back(std::move(seq));
}

void compile(std::string_view text, size_t max_states, Grammar::Impl& g) {
  g.text = std::string(text);
  std::vector<RuleDef> defs = parse_rules(text, g.tokens);
  std::unordered_map<std::string, int32_t> index;
  for (auto& d : defs) {
    if (!index.emplace(d.name, int32_t(g.rule_names.size())).second)
      syntax_error(text, d.pos, "rule '" + d.name + "' is defined twice");
    g.rule_names.push_back(d.name);
  }
  auto root = index.find("root");
  if (root == index.end())
    throw Error(ErrorKind::invalid_argument, "grammar: no rule named 'root'");
  g.root = root->second;
  std::vector<std::vector<int32_t>> uses(defs.size());
  for (size_t r = 0; r < defs.size(); ++r) resolve(defs[r].body, index, text, uses[r]);

  Nfa nfa;
  choose_inlined(defs, uses, g.root, nfa);
  // Every rule not built in place gets an automaton, and so does one referenced from a long
  // repetition (which may in turn reference more).
  std::vector<std::pair<int32_t, int32_t>> ends(defs.size(),
                                                {-1, -1});  // per rule: NFA start, accept
  nfa.needed.assign(defs.size(), 0);
  for (size_t r = 0; r < defs.size(); ++r) nfa.needed[r] = !nfa.inlined[r];
  for (bool more = true; more;) {
    more = false;
    for (size_t r = 0; r < defs.size(); ++r) {
      if (!nfa.needed[r] || ends[r].first >= 0) continue;
      const int32_t start = nfa.add();
      ends[r] = {start, nfa.build(defs[r].body, start)};
      more = true;
    }
  }
  Determinizer dfa(nfa, g, max_states);
  std::vector<int32_t> state_rule;
  for (size_t r = 0; r < defs.size(); ++r) {
    // An inlined rule keeps an index (names in messages) and a start state that nothing reaches.
    g.rule_start.push_back(ends[r].first < 0 ? dfa.add_rule(nfa.add(), -1)
                                             : dfa.add_rule(ends[r].first, ends[r].second));
    state_rule.resize(g.states(), int32_t(r));
  }
  g.ref_begin.assign(1, 0);
  g.token_begin.assign(1, 0);
  for (auto& edges : dfa.symbols) {
    for (auto [symbol, target] : edges) {
      if (symbol >= 0) g.refs.push_back({symbol, target});
      else g.token_edges.push_back({-symbol - 1, target});
    }
    g.ref_begin.push_back(uint32_t(g.refs.size()));
    g.token_begin.push_back(uint32_t(g.token_edges.size()));
  }
  std::vector<uint8_t> nullable;
  completion(g, nullable);
  check_termination(g, nullable, state_rule);
  minimize(g);
  completion(g, nullable);
  g.final_state.assign(g.states(), 0);
  for (size_t q = 0; q < g.states(); ++q) {
    bool any = g.ref_begin[q] != g.ref_begin[q + 1] || g.token_begin[q] != g.token_begin[q + 1];
    for (size_t b = 0; b < 256 && !any; ++b) any = g.next[q * 256 + b] >= 0;
    g.final_state[q] = g.accepting[q] && !any;
  }
  compress(g);
}

}  // namespace grammar

Grammar::Grammar() : impl_(std::make_unique<Impl>()) {}
Grammar::~Grammar() = default;

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, size_t max_states) {
  std::shared_ptr<Grammar> g(new Grammar());
  grammar::compile(text, max_states, *g->impl_);
  return g;
}

const std::string& Grammar::text() const { return impl_->text; }
size_t Grammar::states() const { return impl_->states(); }

}  // namespace qwen3
