// Grammars: the text syntax and its errors, matching bytes, and token masks on a hand-made
// vocabulary checked token by token against the matcher's own byte walk.
#include <gtest/gtest.h>

#include <random>

#include "qwen3/error.h"
#include "qwen3/grammar.h"

namespace qwen3 {
namespace {

std::string error_of(const std::string& text, size_t max_states = 200000) {
  try {
    Grammar::parse(text, max_states);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

// A vocabulary of every single byte plus `extra` pieces, and the added tokens at the end.
std::shared_ptr<const TokenVocabulary> vocabulary(const std::vector<std::string>& extra,
                                                  const std::vector<std::string>& added = {}) {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  for (auto& e : extra) bytes.push_back(e);
  std::set<TokenId> added_ids;
  for (auto& a : added) {
    added_ids.insert(TokenId(bytes.size()));
    bytes.push_back(a);
  }
  return std::make_shared<TokenVocabulary>(bytes, added_ids);
}

GrammarMatcher matcher(const std::string& text, std::shared_ptr<const TokenVocabulary> v,
                       std::vector<TokenId> end = {}) {
  return GrammarMatcher(std::make_shared<TokenGrammar>(Grammar::parse(text), std::move(v)),
                        std::move(end));
}

bool matches(const std::string& grammar, const std::string& text) {
  auto m = matcher(grammar, vocabulary({}));
  return m.accept_bytes(text) && m.complete();
}

bool prefix_ok(const std::string& grammar, const std::string& text) {
  auto m = matcher(grammar, vocabulary({}));
  return m.accept_bytes(text);
}

TEST(GrammarSyntax, ErrorsSayWhereAndWhat) {
  EXPECT_NE(error_of("root ::= \"a\" b").find("undefined rule 'b'"), std::string::npos);
  EXPECT_NE(error_of("a ::= \"x\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(
      error_of("root ::= \"a\"\nroot ::= \"b\"").find("grammar 2:1: rule 'root' is defined twice"),
      std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc").find("grammar 1:10: unterminated literal"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= [a-").find("unterminated character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"").find("unclosed '('"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("maximum is below its minimum"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999}").find("limited to"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("'root' is left-recursive"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= a \"x\"\na ::= b | \"y\"\nb ::= a \"z\"").find("left-recursive"),
            std::string::npos);
  // (A rule used in place, like e ::= "a"?, may repeat; one referenced by its automaton may not.)
  EXPECT_NE(error_of("root ::= e* \"x\"\ne ::= \"a\"? | \"(\" e \")\"")
                .find("repeats 'e', which can match nothing"),
            std::string::npos);
  EXPECT_TRUE(Grammar::parse("root ::= e* \"x\"\ne ::= \"a\"?")->states() > 0);
  EXPECT_NE(error_of("root ::= < bad>").find("token reference"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" ) ").find("grammar 1:14"), std::string::npos);
  EXPECT_NE(error_of("root ::= [a-z]{10000}[a-z]{10000}[a-z]{10000}", 1000).find("too large"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= ((\"ab\"{100}){100}){100}").find("too large"),
            std::string::npos);  // 2M before the DFA
}

TEST(GrammarSyntax, RulesSpanLinesAndComments) {
  const std::string g = R"(# a comment
root ::= greeting
  " " name   # trailing comment
greeting ::= "hi"
  | "hello"
name ::= [a-z]+)";
  EXPECT_TRUE(matches(g, "hello bob"));
  EXPECT_TRUE(matches(g, "hi x"));
  EXPECT_FALSE(matches(g, "hey x"));
  EXPECT_FALSE(matches(g, "hi "));
}

TEST(GrammarMatch, LiteralsClassesRepetitions) {
  EXPECT_TRUE(matches(R"(root ::= "a" [b-d]+ "e"?)", "abdc"));
  EXPECT_TRUE(matches(R"(root ::= "a" [b-d]+ "e"?)", "abe"));
  EXPECT_FALSE(matches(R"(root ::= "a" [b-d]+ "e"?)", "ae"));
  EXPECT_TRUE(matches(R"(root ::= [0-9]{2,3})", "12"));
  EXPECT_TRUE(matches(R"(root ::= [0-9]{2,3})", "123"));
  EXPECT_FALSE(matches(R"(root ::= [0-9]{2,3})", "1"));
  EXPECT_FALSE(prefix_ok(R"(root ::= [0-9]{2,3})", "1234"));
  EXPECT_TRUE(matches(R"(root ::= [0-9]{2,})", "123456"));
  EXPECT_TRUE(matches(R"(root ::= "x"{,2})", ""));
  EXPECT_TRUE(matches(R"(root ::= [^a-z]*)", "ABC 123"));
  EXPECT_FALSE(prefix_ok(R"(root ::= [^a-z]*)", "ABc"));
  EXPECT_TRUE(matches(R"(root ::= ("ab" | "cd")* "!")", "abcdab!"));
  EXPECT_TRUE(matches(R"(root ::= "\x41\u00e9\n\"\\")", "A\xC3\xA9\n\"\\"));
  EXPECT_TRUE(matches("root ::= \"zażółć\"", "zażółć"));
}

// Classes are over code points: a multi-byte character is one class member, and bytes that are
// not UTF-8 never match.
TEST(GrammarMatch, ClassesAreUnicode) {
  const std::string g = R"(root ::= [α-ω]+ | [^"]{1})";
  EXPECT_TRUE(matches(g, "αβγ"));
  EXPECT_TRUE(matches(g, "\xF0\x9F\x98\x80"));  // one 4-byte character outside the range
  EXPECT_TRUE(prefix_ok(g, "\xCE"));            // half of α: a prefix
  EXPECT_FALSE(prefix_ok(g, "\xCE\x41"));
  EXPECT_FALSE(prefix_ok(g, "\xFF"));
  EXPECT_FALSE(prefix_ok(g, "\xED\xA0\x80"));  // an encoded surrogate is not UTF-8
  EXPECT_TRUE(matches("root ::= .", "\xE2\x82\xAC"));
  EXPECT_FALSE(matches("root ::= .", "ab"));
}

TEST(GrammarMatch, Utf8SequencesCoverExactlyTheRange) {
  // Every code point of a few ranges crossing encoding-length boundaries matches; neighbours don't.
  auto encode = [](uint32_t cp) {
    std::string out;
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += {char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
    else if (cp < 0x10000)
      out += {char(0xE0 | cp >> 12), char(0x80 | (cp >> 6 & 0x3F)), char(0x80 | (cp & 0x3F))};
    else
      out += {char(0xF0 | cp >> 18), char(0x80 | (cp >> 12 & 0x3F)), char(0x80 | (cp >> 6 & 0x3F)),
              char(0x80 | (cp & 0x3F))};
    return out;
  };
  for (auto [lo, hi] : std::vector<std::pair<uint32_t, uint32_t>>{
           {0x70, 0x90}, {0x7F0, 0x810}, {0xFFF0, 0x10010}, {0xD7F0, 0xE010}}) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "root ::= [\\U%08X-\\U%08X]", lo, hi);
    auto v = vocabulary({});
    auto g = std::make_shared<TokenGrammar>(Grammar::parse(buf), v);
    for (uint32_t cp = lo - 8; cp <= hi + 8; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      GrammarMatcher m(g, {});
      const bool in = cp >= lo && cp <= hi;
      EXPECT_EQ(m.accept_bytes(encode(cp)) && m.complete(), in) << std::hex << cp;
    }
  }
}

// The mask, computed from the per-state cache and the trie, equals asking the matcher about each
// token one by one, at every step of random walks through several grammars.
TEST(TokenMask, EqualsTokenByTokenCheckOnHandMadeVocabulary) {
  const std::vector<std::string> pieces{
      "ab",  "abc", "abcd", "\"", "\",",  "\"}",  "\":",  "{\"", "{}", "[]",    "[1",     "12",
      "0,",  "1}",  "true", "tr", "null", ", \"", "\n",   "  ",  "é",  "\xC3",  "\xA9\"", "x\"",
      "\"x", "}]",  "]}",   ",",  ": ",   "-1",   "1.5e", "e+3", "}",  "\"a\":"};
  auto v = vocabulary(pieces, {"<end>", "<call>"});
  const TokenId end = TokenId(v->size() - 2), call = TokenId(v->size() - 1);
  const std::vector<std::string> grammars{
      json_object_grammar(),
      json_schema_grammar(nlohmann::ordered_json::parse(
          R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
              "b": {"enum": ["x", 1.5, null]}, "c": {"type": "string", "maxLength": 4}}, "required": ["a"]})")),
      R"(root ::= (<call> "{" [a-z]* "}")+ | "ab" "c"*)",
      R"(root ::= item ("," item)*
         item ::= "\"" [^"]* "\"" | [0-9]+)",
  };
  std::mt19937 rng(5);
  for (auto& text : grammars) {
    auto g = std::make_shared<TokenGrammar>(Grammar::parse(text), v);
    for (int walk = 0; walk < 20; ++walk) {
      GrammarMatcher m(g, {end});
      std::vector<uint64_t> mask((v->size() + 63) / 64);
      for (int step = 0; step < 40 && !m.ended(); ++step) {
        m.fill_mask(mask);
        std::vector<TokenId> allowed;
        for (TokenId id = 0; id < TokenId(v->size()); ++id) {
          const bool bit = mask[size_t(id) / 64] >> (id % 64) & 1;
          ASSERT_EQ(bit, m.allows(id)) << text << "\nstep " << step << " token " << id;
          if (bit) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << text;
        // Walks prefer the longer pieces, so they get somewhere.
        std::vector<TokenId> long_ones;
        for (TokenId id : allowed)
          if (id >= 256) long_ones.push_back(id);
        auto& pool = long_ones.empty() || rng() % 3 == 0 ? allowed : long_ones;
        ASSERT_TRUE(m.accept(pool[rng() % pool.size()]));
      }
    }
  }
  (void)call;
}

TEST(TokenMask, EndTokenOnlyWhenComplete) {
  auto v = vocabulary({"{}", "{\"a\": 1}"}, {"<end>"});
  const TokenId end = TokenId(v->size() - 1);
  auto m = matcher(json_object_grammar(), v, {end});
  EXPECT_FALSE(m.allows(end));
  EXPECT_FALSE(m.accept(end));
  ASSERT_TRUE(m.accept(256));  // "{}"
  std::vector<uint64_t> mask((v->size() + 63) / 64);
  m.fill_mask(mask);
  for (TokenId id = 0; id < TokenId(v->size()); ++id)
    EXPECT_EQ(mask[size_t(id) / 64] >> (id % 64) & 1, id == end ? 1u : 0u) << id;
  EXPECT_TRUE(m.accept(end));
  EXPECT_TRUE(m.ended());
  EXPECT_FALSE(m.accept('x'));
}

TEST(TokenMask, AddedTokensOnlyByName) {
  auto v = vocabulary({"<tool_call>"}, {"<tool_call>"});
  const TokenId added = TokenId(v->size() - 1);
  // The spelled-out text is an ordinary piece (id 256); the added token is not in the trie.
  auto by_name = matcher("root ::= <tool_call> \"x\"", v);
  EXPECT_TRUE(by_name.allows(added));
  EXPECT_FALSE(by_name.allows(256));
  EXPECT_FALSE(by_name.allows('<'));
  auto by_text = matcher("root ::= \"<tool_call>x\"", v);
  EXPECT_FALSE(by_text.allows(added));
  EXPECT_TRUE(by_text.allows(256));
  EXPECT_THROW(matcher("root ::= <nope>", v), Error);
  auto by_id = matcher("root ::= <[" + std::to_string(added) + "]>", v);
  EXPECT_TRUE(by_id.accept(added));
  EXPECT_TRUE(by_id.complete());
}

TEST(TokenConstraint, ThinkingIsFreeUntilTheEndTag) {
  auto v = vocabulary({}, {"<think>", "</think>", "<end>"});
  const TokenId think = 256, unthink = 257, end = 258;
  GrammarConstraint c{std::make_shared<TokenGrammar>(Grammar::parse("root ::= \"ok\""), v),
                      GrammarConstraint::Reasoning::optional, think, unthink};
  auto bit = [](std::span<const uint64_t> m, TokenId id) {
    return bool(m[size_t(id) / 64] >> (id % 64) & 1);
  };
  TokenConstraint t(c, {end});
  auto first = t.mask(v->size());
  EXPECT_TRUE(bit(first, think));
  EXPECT_TRUE(bit(first, 'o'));
  EXPECT_FALSE(bit(first, 'x'));
  t.accept(think);
  auto inside = t.mask(v->size());
  EXPECT_TRUE(bit(inside, 'x'));
  EXPECT_TRUE(bit(inside, unthink));
  EXPECT_FALSE(bit(inside, end));  // the answer must come
  t.accept('x');
  t.accept(unthink);
  auto after = t.mask(v->size());
  EXPECT_TRUE(bit(after, 'o'));
  EXPECT_FALSE(bit(after, 'x'));
  EXPECT_FALSE(bit(after, think));
  t.accept('o');
  t.accept('k');
  auto done = t.mask(v->size());
  for (TokenId id = 0; id < TokenId(v->size()); ++id) EXPECT_EQ(bit(done, id), id == end) << id;
  EXPECT_THROW(t.accept('x'), Error);

  // Without thinking the grammar applies at once; a prompt that opened <think> starts inside it.
  TokenConstraint plain({c.grammar, GrammarConstraint::Reasoning::none, think, unthink}, {end});
  EXPECT_FALSE(bit(plain.mask(v->size()), think));
  TokenConstraint opened({c.grammar, GrammarConstraint::Reasoning::open, think, unthink}, {end});
  EXPECT_TRUE(bit(opened.mask(v->size()), 'x'));
  // Tokens past the vocabulary the model has (a smaller logits row) are never allowed.
  TokenConstraint small({c.grammar, GrammarConstraint::Reasoning::none, think, unthink}, {end});
  EXPECT_EQ(small.mask(128).size(), 2u);
  EXPECT_THROW(small.mask(100), Error);  // "o" is id 111: nothing left to allow
}

}  // namespace
}  // namespace qwen3
