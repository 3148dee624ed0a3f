// Token masks: the vocabulary trie, stacks of grammar states, the per-state cache, and the
// reasoning gate generations use.
//
// A matcher's position is a set of stacks; each frame is a state of one rule's automaton, the
// frames below it the states to return to. The tokens a stack allows split into those its top
// rule accepts by itself (the same wherever the rule is used: computed once per grammar state by
// one walk of the vocabulary trie, and cached) and the few that leave the top rule part-way (a
// string's closing quote followed by ",": cached as their remainders, checked against the frames
// below at each step). A state that can end its rule also allows what the frame below allows.
#include <algorithm>
#include <bit>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "grammar/automaton.h"
#include "qwen3/error.h"
#include "qwen3/grammar.h"

namespace qwen3 {

// ---------------------------------------------------------------------------------------------
// Vocabulary

struct TokenVocabulary::Impl {
  struct Node {
    uint8_t byte;
    bool shared;    // more tokens than `token` have these bytes (same_bytes)
    TokenId token;  // -1: no token ends here
    uint32_t end;   // one past the last node of its subtree (nodes are in depth-first order)
  };
  std::vector<std::string> bytes;   // [size] decoded bytes; "" for added tokens
  std::vector<TokenId> same_bytes;  // [size] the next token with the same bytes, or -1
  std::unordered_map<std::string, TokenId> added;  // added tokens by name
  std::vector<Node> trie;

  size_t words() const { return (bytes.size() + 63) / 64; }

  void build_trie() {
    std::vector<TokenId> ids;
    for (size_t id = 0; id < bytes.size(); ++id)
      if (!bytes[id].empty()) ids.push_back(TokenId(id));
    std::sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
      return bytes[size_t(a)] < bytes[size_t(b)] || (bytes[size_t(a)] == bytes[size_t(b)] && a < b);
    });
    same_bytes.assign(bytes.size(), -1);
    std::vector<uint32_t> path;  // node index per depth of the previous token
    std::string_view previous;
    for (TokenId id : ids) {
      const std::string& s = bytes[size_t(id)];
      size_t common = 0;
      while (common < previous.size() && common < s.size() && previous[common] == s[common])
        ++common;
      if (common == s.size() && common == previous.size()) {  // same bytes as the previous token
        TokenId t = trie[path.back()].token;
        while (same_bytes[size_t(t)] >= 0) t = same_bytes[size_t(t)];
        same_bytes[size_t(t)] = id;
        trie[path.back()].shared = true;
        continue;
      }
      while (path.size() > common) {
        trie[path.back()].end = uint32_t(trie.size());
        path.pop_back();
      }
      for (size_t k = common; k < s.size(); ++k) {
        path.push_back(uint32_t(trie.size()));
        trie.push_back({uint8_t(s[k]), false, -1, 0});
      }
      trie[path.back()].token = id;
      previous = s;
    }
    while (!path.empty()) {
      trie[path.back()].end = uint32_t(trie.size());
      path.pop_back();
    }
  }
};

TokenVocabulary::TokenVocabulary(const Tokenizer& tokenizer) : impl_(std::make_unique<Impl>()) {
  const size_t n = tokenizer.vocab_size();
  impl_->bytes.resize(n);
  for (size_t id = 0; id < n; ++id) {
    const auto t = TokenId(id);
    std::string_view b = tokenizer.token_bytes(t);
    if (b.empty()) continue;
    // Added tokens (<|im_end|>, <think>) are matched in text before BPE, so their spelling only
    // encodes to them when special tokens are parsed. Their bytes never enter the trie: a string
    // in a grammar cannot end a turn or open a tool call by spelling one.
    bool added = tokenizer.is_special(t);
    if (!added &&
        tokenizer.token(t) == b) {  // byte-level pieces of printable ASCII, and added tokens
      const auto plain = tokenizer.encode(b, false);
      added = !(plain.size() == 1 && plain[0] == t) &&
              tokenizer.encode(b, true) == std::vector<TokenId>{t};
    }
    if (added) impl_->added.emplace(std::string(b), t);
    else impl_->bytes[id] = std::string(b);
  }
  impl_->build_trie();
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::set<TokenId> added)
    : impl_(std::make_unique<Impl>()) {
  impl_->bytes = std::move(token_bytes);
  for (TokenId id : added) {
    if (id < 0 || size_t(id) >= impl_->bytes.size())
      throw Error(ErrorKind::invalid_argument, "vocabulary: added id out of range");
    impl_->added.emplace(impl_->bytes[size_t(id)], id);
    impl_->bytes[size_t(id)].clear();
  }
  impl_->build_trie();
}

TokenVocabulary::~TokenVocabulary() = default;
size_t TokenVocabulary::size() const { return impl_->bytes.size(); }

TokenId TokenVocabulary::added_token(std::string_view name) const {
  auto it = impl_->added.find(std::string(name));
  return it == impl_->added.end() ? -1 : it->second;
}

std::string_view TokenVocabulary::bytes(TokenId id) const {
  return id >= 0 && size_t(id) < impl_->bytes.size() ? std::string_view(impl_->bytes[size_t(id)])
                                                     : std::string_view();
}

// ---------------------------------------------------------------------------------------------
// Stacks

namespace {

using GrammarImpl = Grammar::Impl;

// A stack's top frame is a value; the frames below it live in an arena, each naming its parent.
struct Frame {
  int32_t state;   // -1 (with parent -1): the root rule has ended and nothing may follow
  int32_t parent;  // index in the arena of the frame below, -1 = none
  bool operator==(const Frame&) const = default;
};

constexpr Frame kEnded{-1, -1};

// Appends to `out` the tops of the stacks that stack `f` becomes after `byte`. Popping the
// bottom frame with the byte still to consume calls on_bottom(). Terminates because the grammar
// has no left recursion and no empty-match cycles (checked when compiled).
template <class OnBottom>
void step_byte(const GrammarImpl& g, std::vector<Frame>& arena, Frame f, uint8_t byte,
               std::vector<Frame>& out, OnBottom& on_bottom) {
  const int32_t next = g.step(f.state, byte);
  if (next >= 0) out.push_back({next, f.parent});
  for (uint32_t k = g.ref_begin[size_t(f.state)], e = g.ref_begin[size_t(f.state) + 1]; k < e;
       ++k) {
    const auto& edge = g.refs[k];
    arena.push_back({edge.target, f.parent});
    step_byte(g, arena, Frame{g.rule_start[size_t(edge.symbol)], int32_t(arena.size() - 1)}, byte,
              out, on_bottom);
  }
  if (g.accepting[size_t(f.state)]) {
    if (f.parent < 0) on_bottom();
    else step_byte(g, arena, arena[size_t(f.parent)], byte, out, on_bottom);
  }
}

// The same for an added token the grammar names (token index `token`); the bottom frame is
// popped only when `pop_bottom` (a committed stack, not a cache walk).
void step_token(const GrammarImpl& g, std::vector<Frame>& arena, Frame f, int32_t token,
                std::vector<Frame>& out, bool pop_bottom) {
  for (uint32_t k = g.token_begin[size_t(f.state)], e = g.token_begin[size_t(f.state) + 1]; k < e;
       ++k)
    if (g.token_edges[k].symbol == token) out.push_back({g.token_edges[k].target, f.parent});
  for (uint32_t k = g.ref_begin[size_t(f.state)], e = g.ref_begin[size_t(f.state) + 1]; k < e;
       ++k) {
    const auto& edge = g.refs[k];
    arena.push_back({edge.target, f.parent});
    step_token(g, arena, Frame{g.rule_start[size_t(edge.symbol)], int32_t(arena.size() - 1)}, token,
               out, pop_bottom);
  }
  if (g.accepting[size_t(f.state)] && f.parent >= 0 && pop_bottom)
    step_token(g, arena, arena[size_t(f.parent)], token, out, pop_bottom);
}

// Removes tops equal to an earlier one (same state over the same frame).
void dedupe(std::vector<Frame>& tops, size_t from) {
  if (tops.size() - from < 2) return;
  size_t kept = from;
  for (size_t k = from; k < tops.size(); ++k)
    if (std::find(tops.begin() + long(from), tops.begin() + long(kept), tops[k]) ==
        tops.begin() + long(kept))
      tops[kept++] = tops[k];
  tops.resize(kept);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// What each grammar state allows by itself

struct TokenGrammar::Cache {
  struct Group {
    std::string_view remainder;  // the token's bytes after its top rule ended (into the vocabulary)
    std::vector<TokenId> tokens;
  };
  struct Entry {
    std::vector<uint64_t> accepted;  // [vocabulary words] tokens the state's rule consumes whole
    std::vector<TokenId> sparse;     // the same as a list, when short (then accepted is empty)
    std::vector<int32_t> tokens;     // grammar token indexes allowed (without leaving the rule)
    std::vector<Group> groups;       // tokens that leave the rule part-way, by remainder
  };

  std::mutex mutex;
  std::vector<std::unique_ptr<Entry>> entries;  // [grammar states]
  std::vector<TokenId> token_ids;               // [grammar tokens]
  std::vector<uint8_t> simple;  // [grammar states] no references, cannot end its rule

  const Entry& entry(const GrammarImpl& g, const TokenVocabulary::Impl& v, int32_t state) {
    std::lock_guard lock(mutex);
    auto& slot = entries[size_t(state)];
    if (!slot) slot = build(g, v, state);
    return *slot;
  }

  // One depth-first walk of the trie with the stack [state] alone: a subtree is skipped as soon as
  // its prefix cannot continue. Most nodes take the fast path: one state, one table lookup.
  std::unique_ptr<Entry> build(const GrammarImpl& g, const TokenVocabulary::Impl& v,
                               int32_t state) const {
    auto entry = std::make_unique<Entry>();
    std::vector<uint64_t> accepted(v.words(), 0);
    std::vector<Frame> arena;
    std::vector<Frame> tops{{state, -1}};
    struct Level {
      uint32_t tops_begin, tops_end, arena_mark, end;
    };
    const auto n = uint32_t(v.trie.size());
    std::vector<Level> levels{{0, 1, 0, n}};
    std::vector<std::pair<uint32_t, uint32_t>> leaving;  // (node, bytes before it)
    bool popped = false;
    auto on_bottom = [&] { popped = true; };
    for (uint32_t i = 0; i < n;) {
      while (levels.back().end <= i) {
        tops.resize(levels.back().tops_begin);
        arena.resize(levels.back().arena_mark);
        levels.pop_back();
      }
      const Level level = levels.back();
      const auto& node = v.trie[i];
      const size_t begin = tops.size(), mark = arena.size();
      popped = false;
      for (uint32_t k = level.tops_begin; k < level.tops_end; ++k) {
        const Frame f = tops[k];
        if (simple[size_t(f.state)]) {
          const int32_t next = g.step(f.state, node.byte);
          if (next >= 0) tops.push_back({next, f.parent});
        } else {
          step_byte(g, arena, f, node.byte, tops, on_bottom);
        }
      }
      // Leaving at depth 0 is the frame below's business (the state can complete: see fill_mask).
      if (popped && levels.size() > 1) leaving.push_back({i, uint32_t(levels.size() - 1)});
      if (tops.size() == begin) {
        arena.resize(mark);
        i = node.end;
        continue;
      }
      dedupe(tops, begin);
      if (node.token >= 0) accepted[size_t(node.token) / 64] |= 1ull << (node.token % 64);
      if (node.shared)
        for (TokenId t = v.same_bytes[size_t(node.token)]; t >= 0; t = v.same_bytes[size_t(t)])
          accepted[size_t(t) / 64] |= 1ull << (t % 64);
      levels.push_back({uint32_t(begin), uint32_t(tops.size()), uint32_t(mark), node.end});
      ++i;
    }
    size_t count = 0;
    for (uint64_t w : accepted) count += size_t(std::popcount(w));
    if (count * 32 < accepted.size() * 64 / 8) {  // a list under 1/8 of the bitset's size
      for (size_t w = 0; w < accepted.size(); ++w)
        for (uint64_t bits = accepted[w]; bits; bits &= bits - 1)
          entry->sparse.push_back(TokenId(w * 64 + size_t(std::countr_zero(bits))));
    }

    std::sort(leaving.begin(), leaving.end());
    leaving.erase(std::unique(leaving.begin(), leaving.end()), leaving.end());
    std::unordered_map<std::string_view, size_t> group_of;
    for (auto [node, depth] : leaving) {
      for (uint32_t j = node; j < v.trie[node].end; ++j) {
        for (TokenId t = v.trie[j].token; t >= 0; t = v.same_bytes[size_t(t)]) {
          if (accepted[size_t(t) / 64] >> (t % 64) & 1) continue;
          std::string_view rest = std::string_view(v.bytes[size_t(t)]).substr(depth);
          auto [it, fresh] = group_of.emplace(rest, entry->groups.size());
          if (fresh) entry->groups.push_back({rest, {}});
          entry->groups[it->second].tokens.push_back(t);
        }
      }
    }
    for (auto& group : entry->groups) {
      std::sort(group.tokens.begin(), group.tokens.end());
      group.tokens.erase(std::unique(group.tokens.begin(), group.tokens.end()), group.tokens.end());
    }
    for (int32_t k = 0; k < int32_t(token_ids.size()); ++k) {
      std::vector<Frame> a, out;
      step_token(g, a, Frame{state, -1}, k, out, false);
      if (!out.empty()) entry->tokens.push_back(k);
    }
    if (entry->sparse.empty() && count > 0) entry->accepted = std::move(accepted);
    return entry;
  }
};

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar,
                           std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      cache_(std::make_unique<Cache>()) {
  const auto& g = grammar_->impl();
  cache_->entries.resize(g.states());
  cache_->simple.resize(g.states());
  for (size_t q = 0; q < g.states(); ++q)
    cache_->simple[q] = !g.accepting[q] && g.ref_begin[q] == g.ref_begin[q + 1];
  for (auto& t : g.tokens) {
    TokenId id = t.id;
    if (id < 0) {
      id = vocabulary_->added_token(t.name);
      if (id < 0)
        throw Error(ErrorKind::invalid_argument,
                    "grammar: the vocabulary has no added token " + t.name);
    } else if (size_t(id) >= vocabulary_->size()) {
      throw Error(ErrorKind::invalid_argument,
                  "grammar: token <[" + std::to_string(id) + "]> is outside the vocabulary");
    }
    cache_->token_ids.push_back(id);
  }
}

TokenGrammar::~TokenGrammar() = default;

// ---------------------------------------------------------------------------------------------
// Matcher

struct GrammarMatcher::State {
  std::vector<Frame> arena;  // the frames below the tops (compacted after each token)
  std::vector<Frame> tops;   // one per stack; kEnded: the root rule ended and nothing may follow
  std::vector<Frame> scratch, scratch2, visited;

  // Pops frames that have ended and allow nothing more, then copies the live frames into a fresh
  // arena, merging equal stacks.
  void normalize(const GrammarImpl& g, std::vector<Frame> fresh_tops) {
    std::vector<Frame> fresh;
    std::unordered_map<uint64_t, int32_t> index;
    std::vector<int32_t> mapped(arena.size(), -2);
    auto copy = [&](auto&& self, int32_t f) -> int32_t {
      if (f < 0) return -1;
      if (mapped[size_t(f)] != -2) return mapped[size_t(f)];
      const int32_t parent = self(self, arena[size_t(f)].parent);
      const uint64_t key = uint64_t(uint32_t(arena[size_t(f)].state)) << 32 | uint32_t(parent + 1);
      auto [it, added] = index.emplace(key, int32_t(fresh.size()));
      if (added) fresh.push_back({arena[size_t(f)].state, parent});
      return mapped[size_t(f)] = it->second;
    };
    std::vector<Frame> out;
    for (Frame t : fresh_tops) {
      while (t.state >= 0 && g.final_state[size_t(t.state)])
        t = t.parent >= 0 ? arena[size_t(t.parent)] : kEnded;
      if (t.state >= 0) t.parent = copy(copy, t.parent);
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
    arena = std::move(fresh);
    tops = std::move(out);
  }

  // The tops after `bytes` from `from` (empty when they cannot be taken). The arena keeps the
  // frames pushed on the way; callers truncate it or normalize.
  std::vector<Frame>& run(const GrammarImpl& g, const std::vector<Frame>& from,
                          std::string_view bytes) {
    auto& cur = scratch;
    auto& next = scratch2;
    cur.assign(from.begin(), from.end());
    auto ignore = [] {};
    for (unsigned char b : bytes) {
      next.clear();
      for (const Frame t : cur)
        if (t.state >= 0) step_byte(g, arena, t, b, next, ignore);
      dedupe(next, 0);
      std::swap(cur, next);
      if (cur.empty()) break;
    }
    return cur;
  }

  // Whether the stack under arena frame `parent` can take `bytes` (ending anywhere).
  bool takes(const GrammarImpl& g, int32_t parent, std::string_view bytes) {
    const size_t mark = arena.size();
    const bool ok = !run(g, {arena[size_t(parent)]}, bytes).empty();
    arena.resize(mark);
    return ok;
  }

  bool complete(const GrammarImpl& g, Frame t) const {
    if (t.state < 0) return true;
    for (;;) {
      if (!g.can_complete[size_t(t.state)]) return false;
      if (t.parent < 0) return true;
      t = arena[size_t(t.parent)];
    }
  }
};

namespace {

void set_bit(std::span<uint64_t> mask, TokenId id) { mask[size_t(id) / 64] |= 1ull << (id % 64); }

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar,
                               std::vector<TokenId> end_tokens)
    : grammar_(std::move(grammar)),
      end_tokens_(std::move(end_tokens)),
      state_(std::make_unique<State>()) {
  const auto& g = grammar_->grammar().impl();
  state_->normalize(g, {Frame{g.rule_start[size_t(g.root)], -1}});
}

GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher::~GrammarMatcher() = default;

bool GrammarMatcher::complete() const {
  const auto& g = grammar_->grammar().impl();
  return std::any_of(state_->tops.begin(), state_->tops.end(),
                     [&](Frame t) { return state_->complete(g, t); });
}

void GrammarMatcher::fill_mask(std::span<uint64_t> mask) {
  const auto& g = grammar_->grammar().impl();
  const auto& v = grammar_->vocabulary().impl();
  auto& cache = grammar_->cache();
  std::fill(mask.begin(), mask.end(), 0);
  if (ended_) return;
  const size_t words = std::min(mask.size(), v.words());
  bool end = false;
  auto& s = *state_;
  s.visited.clear();
  // A stack's own tokens, then (when its top can end its rule) those of the stack below.
  for (Frame f : s.tops) {
    for (;;) {
      if (f.state < 0) {
        end = true;
        break;
      }
      if (std::find(s.visited.begin(), s.visited.end(), f) != s.visited.end()) break;
      s.visited.push_back(f);
      const auto& e = cache.entry(g, v, f.state);
      for (size_t w = 0; w < std::min(words, e.accepted.size()); ++w) mask[w] |= e.accepted[w];
      for (TokenId id : e.sparse) set_bit(mask, id);
      for (int32_t k : e.tokens) set_bit(mask, cache.token_ids[size_t(k)]);
      if (f.parent >= 0) {
        for (auto& group : e.groups) {
          const bool all_set =
              std::all_of(group.tokens.begin(), group.tokens.end(),
                          [&](TokenId id) { return mask[size_t(id) / 64] >> (id % 64) & 1; });
          if (!all_set && s.takes(g, f.parent, group.remainder))
            for (TokenId id : group.tokens) set_bit(mask, id);
        }
      }
      if (!g.can_complete[size_t(f.state)]) break;
      f = f.parent >= 0 ? s.arena[size_t(f.parent)] : kEnded;
    }
  }
  if (end)
    for (TokenId id : end_tokens_)
      if (id >= 0 && size_t(id) / 64 < mask.size()) set_bit(mask, id);
}

// Tops after the grammar token(s) with this id, appended to `out`.
static void token_tops(const TokenGrammar& grammar, GrammarMatcher::State& s, TokenId id,
                       std::vector<Frame>& out) {
  const auto& g = grammar.grammar().impl();
  const auto& ids = grammar.cache().token_ids;
  for (int32_t k = 0; k < int32_t(ids.size()); ++k)
    if (ids[size_t(k)] == id)
      for (const Frame t : std::vector<Frame>(s.tops))
        if (t.state >= 0) step_token(g, s.arena, t, k, out, true);
}

bool GrammarMatcher::allows(TokenId id) {
  if (ended_) return false;
  if (std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end() && complete())
    return true;
  const auto& g = grammar_->grammar().impl();
  auto& s = *state_;
  const size_t mark = s.arena.size();
  std::vector<Frame> out;
  token_tops(*grammar_, s, id, out);
  std::string_view bytes = grammar_->vocabulary().bytes(id);
  const bool ok = !out.empty() || (!bytes.empty() && !s.run(g, s.tops, bytes).empty());
  s.arena.resize(mark);
  return ok;
}

bool GrammarMatcher::accept(TokenId id) {
  if (ended_) return false;
  if (std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end() && complete()) {
    ended_ = true;
    return true;
  }
  const auto& g = grammar_->grammar().impl();
  auto& s = *state_;
  const size_t mark = s.arena.size();
  std::vector<Frame> out;
  token_tops(*grammar_, s, id, out);
  if (out.empty()) {
    std::string_view bytes = grammar_->vocabulary().bytes(id);
    if (!bytes.empty()) out = s.run(g, s.tops, bytes);
  }
  if (out.empty()) {
    s.arena.resize(mark);
    return false;
  }
  s.normalize(g, std::move(out));
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (ended_) return false;
  const auto& g = grammar_->grammar().impl();
  auto& s = *state_;
  const size_t mark = s.arena.size();
  std::vector<Frame> out = s.run(g, s.tops, bytes);
  if (out.empty()) {
    s.arena.resize(mark);
    return false;
  }
  s.normalize(g, std::move(out));
  return true;
}

// ---------------------------------------------------------------------------------------------
// The reasoning gate

TokenConstraint::TokenConstraint(const GrammarConstraint& constraint,
                                 std::vector<TokenId> end_tokens)
    : constraint_(constraint),
      end_tokens_(end_tokens),
      matcher_(constraint.grammar, std::move(end_tokens)) {
  using R = GrammarConstraint::Reasoning;
  phase_ = Phase::grammar;
  if (constraint_.reasoning == R::optional && constraint_.think_start >= 0 &&
      constraint_.think_end >= 0)
    phase_ = Phase::maybe_thinking;
  if (constraint_.reasoning == R::open && constraint_.think_end >= 0) phase_ = Phase::thinking;
}

std::span<const uint64_t> TokenConstraint::mask(size_t vocab) {
  const size_t words = (vocab + 63) / 64;
  mask_.assign(std::max(words, constraint_.grammar->vocabulary().impl().words()), 0);
  std::span<uint64_t> m(mask_);
  if (phase_ == Phase::thinking) {
    // Free thinking, but the turn cannot end before </think>: the answer must follow.
    std::fill(mask_.begin(), mask_.begin() + long(words), ~0ull);
    for (TokenId id : end_tokens_)
      if (id >= 0 && size_t(id) < vocab) m[size_t(id) / 64] &= ~(1ull << (id % 64));
  } else {
    matcher_.fill_mask(m);
    if (phase_ == Phase::maybe_thinking && size_t(constraint_.think_start) < vocab)
      set_bit(m, constraint_.think_start);
  }
  if (vocab % 64) mask_[words - 1] &= (1ull << (vocab % 64)) - 1;
  bool any = false;
  for (size_t w = 0; w < words && !any; ++w) any = mask_[w] != 0;
  if (!any)
    throw Error(ErrorKind::invalid_argument,
                "grammar: no token of the vocabulary can continue the output");
  return {mask_.data(), words};
}

void TokenConstraint::accept(TokenId id) {
  if (phase_ == Phase::thinking) {
    if (std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end())
      throw Error(ErrorKind::invalid_argument, "grammar: the turn ended inside the reasoning");
    if (id == constraint_.think_end) phase_ = Phase::grammar;
    return;
  }
  if (phase_ == Phase::maybe_thinking) {
    if (id == constraint_.think_start) {
      phase_ = Phase::thinking;
      return;
    }
    phase_ = Phase::grammar;
  }
  if (!matcher_.accept(id))
    throw Error(ErrorKind::invalid_argument,
                "grammar: token " + std::to_string(id) + " is not allowed here");
}

}  // namespace qwen3
