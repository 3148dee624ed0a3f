// `qwen3 tokenize`: text -> ids and pieces, or ids -> text, with the model folder's tokenizer.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "qwen3/error.h"
#include "qwen3/tokenizer.h"

namespace qwen3::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::string text;
  std::string decode;  // comma-separated ids
  bool json = false;
  bool no_special = false;
};

std::vector<TokenId> parse_ids(const std::string& list, const Tokenizer& tokenizer) {
  std::vector<TokenId> ids;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t", used) != std::string::npos) {
      throw Error(ErrorKind::invalid_argument, "--decode: '" + item + "' is not a token id");
    }
    if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size() ||
        tokenizer.token(TokenId(id)).empty()) {
      throw Error(ErrorKind::invalid_argument,
                  "--decode: " + std::to_string(id) + " is not in the vocabulary");
    }
    ids.push_back(TokenId(id));
  }
  return ids;
}

// A token's bytes as a quoted, readable string: UTF-8 as is, control characters and bytes of a
// cut character escaped ("\n", "\xE2").
std::string readable(std::string_view bytes) {
  std::string out = "\"";
  char hex[8];
  for (size_t i = 0; i < bytes.size();) {
    auto b = static_cast<unsigned char>(bytes[i]);
    size_t len = b < 0x80 ? 1 : b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b <= 0xF4 ? 4 : 0;
    bool whole = len > 0 && i + len <= bytes.size();
    for (size_t k = 1; whole && k < len; ++k)
      whole = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (b == '\n') {
      out += "\\n";
    } else if (b == '\t') {
      out += "\\t";
    } else if (b == '\r') {
      out += "\\r";
    } else if (b == '"' || b == '\\') {
      out += '\\';
      out += char(b);
    } else if (b >= 0x80 && whole) {
      out.append(bytes.substr(i, len));
      i += len;
      continue;
    } else if (b < 0x20 || b >= 0x7F) {
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += hex;
    } else {
      out += char(b);
    }
    ++i;
  }
  return out + "\"";
}

void run_tokenize(const TokenizeOptions& opt) {
  Tokenizer tokenizer = Tokenizer::load(opt.model_dir);
  if (!opt.decode.empty()) {
    std::string text = tokenizer.decode(parse_ids(opt.decode, tokenizer));
    if (opt.json) {
      std::printf("%s\n", nlohmann::json{{"text", text}}.dump().c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
    return;
  }
  std::string text = opt.text;
  if (text == "-")
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::vector<TokenId> ids = tokenizer.encode(text, !opt.no_special);
  if (opt.json) {
    nlohmann::json tokens = nlohmann::json::array();
    for (TokenId id : ids) tokens.push_back(std::string(tokenizer.token(id)));
    std::printf("%s\n", nlohmann::json{{"ids", ids}, {"tokens", tokens}}.dump().c_str());
    return;
  }
  std::printf("%6s %8s  %s\n", "index", "id", "piece");
  for (size_t i = 0; i < ids.size(); ++i) {
    std::printf("%6zu %8d  %s%s\n", i, ids[i], readable(tokenizer.token_bytes(ids[i])).c_str(),
                tokenizer.is_special(ids[i]) ? "  (special)" : "");
  }
  std::printf("%zu tokens\n", ids.size());
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto opt = std::make_shared<TokenizeOptions>();
  CLI::App* cmd =
      app.add_subcommand("tokenize", "Show the token ids and pieces of a text, or decode ids");
  cmd->add_option("MODEL_DIR", opt->model_dir, "Model folder with tokenizer.json, or a GGUF file")
      ->required();
  cmd->add_option("TEXT", opt->text, "Text to tokenize; - reads standard input");
  cmd->add_option("--decode", opt->decode, "Decode comma-separated ids (1,2,3) instead");
  cmd->add_flag("--json", opt->json,
                "Print {\"ids\": [...], \"tokens\": [...]} (or {\"text\": ...} with --decode)");
  cmd->add_flag("--no-special", opt->no_special,
                "Treat <|im_start|> and other added tokens in TEXT as plain text");
  cmd->callback([opt] {
    if (opt->decode.empty() && opt->text.empty()) {
      throw Error(ErrorKind::invalid_argument,
                  "tokenize: give TEXT, - for standard input, or --decode IDS");
    }
    run_tokenize(*opt);
  });
}

}  // namespace qwen3::cli
