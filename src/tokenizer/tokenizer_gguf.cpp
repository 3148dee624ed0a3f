// Loads a GGUF file's tokenizer.ggml.* metadata into the tokenizer's tables. The converter
// (convert_hf_to_gguf.py's get_vocab_base) writes tokenizer.json's vocabulary and added tokens as
// one list by id, each with a type, and the merges as "left right" strings; only the "gpt2"
// (byte-level BPE) model with a Qwen pre-tokenizer is accepted.
#include <string>

#include "io/gguf.h"
#include "qwen3/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_tables.h"

namespace qwen3::detail {
namespace {

// llama.cpp's token types (llama_token_type).
enum TokenType : int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5 };

SplitPattern split_pattern_named(const io::GgufFile& f) {
  const std::string_view pre =
      f.has_key("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "qwen2";
  if (pre == "qwen2") return SplitPattern::qwen2;
  if (pre == "qwen35") return SplitPattern::qwen35;
  throw Error(ErrorKind::unsupported, f.name() + ": pre-tokenizer \"" + std::string(pre) +
                                          "\" is not supported (supported: qwen2, qwen35)");
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> load_tokenizer_gguf(const std::filesystem::path& file) {
  const io::GgufFile f = io::GgufFile::open(file);
  if (!f.has_key("tokenizer.ggml.model"))
    throw Error(ErrorKind::format,
                f.name() + ": no tokenizer in the metadata (tokenizer.ggml.model is missing)");
  const std::string_view model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2")
    throw Error(ErrorKind::unsupported, f.name() + ": tokenizer model \"" + std::string(model) +
                                            "\" is not supported (supported: gpt2)");
  TokenizerSource s{f.name(), split_pattern_named(f), {}, {}, {}};
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.has_key("tokenizer.ggml.token_type")
                         ? f.get_int_array("tokenizer.ggml.token_type")
                         : std::vector<int64_t>(tokens.size(), TokenType::normal);
  if (types.size() != tokens.size())
    throw Error(ErrorKind::format, f.name() + ": tokenizer.ggml.token_type has " +
                                       std::to_string(types.size()) + " entries for " +
                                       std::to_string(tokens.size()) + " tokens");
  for (size_t id = 0; id < tokens.size(); ++id) {
    const TokenId i = TokenId(id);
    switch (types[id]) {
      case TokenType::control: s.added.push_back({tokens[id], i, true}); break;
      case TokenType::user_defined: s.added.push_back({tokens[id], i, false}); break;
      case TokenType::unused: break;  // the converter's [PADn] fillers up to the matrix's rows
      default: s.vocab.push_back({tokens[id], i});
    }
  }
  const auto merges = f.get_string_array("tokenizer.ggml.merges");
  s.merges.reserve(merges.size());
  for (std::string_view m : merges) {
    const size_t space = m.find(' ');
    if (space == std::string_view::npos)
      throw Error(ErrorKind::format, f.name() + ": merge " + std::to_string(s.merges.size()) +
                                         " is not \"left right\"");
    s.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  return build_tokenizer(s);
}

}  // namespace qwen3::detail
