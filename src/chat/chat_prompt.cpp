// Tokenizing a rendered conversation without letting message text become control tokens.
#include <string>
#include <vector>

#include "qwen3/chat.h"

namespace qwen3 {

namespace {

// U+E000 <index> U+E001: private-use characters that no template or tokenizer treats specially.
const std::string kOpen = "\xEE\x80\x80", kClose = "\xEE\x80\x81";

// Control tokens only: <think> and </think> are added but not special, and assistant history
// must keep them for the template to strip earlier reasoning.
bool spells_special_token(const Tokenizer& tok, const std::string& text) {
  for (TokenId id : tok.encode(text, true))
    if (tok.is_special(id)) return true;
  return false;
}

// Replaces every string in `j` that spells a special token by a numbered placeholder.
void hide_specials(nlohmann::ordered_json& j, const Tokenizer& tok, std::vector<std::string>& hidden) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (!spells_special_token(tok, s)) return;
    j = kOpen + std::to_string(hidden.size()) + kClose;
    hidden.push_back(s);
  } else if (j.is_structured()) {
    for (auto& v : j) hide_specials(v, tok, hidden);
  }
}

void append(std::vector<TokenId>& out, const std::vector<TokenId>& ids) { out.insert(out.end(), ids.begin(), ids.end()); }

}  // namespace

std::vector<TokenId> encode_chat(const ChatTemplate& chat_template, const Tokenizer& tok,
                                 const nlohmann::ordered_json& messages, const ChatOptions& options) {
  nlohmann::ordered_json safe = messages;
  std::vector<std::string> hidden;
  hide_specials(safe, tok, hidden);
  const std::string rendered = chat_template.render(safe, options);
  if (hidden.empty()) return tok.encode(rendered, true);
  // Template text around the placeholders may hold special tokens; the hidden strings may not.
  std::vector<TokenId> ids;
  size_t pos = 0;
  for (;;) {
    const size_t open = rendered.find(kOpen, pos);
    const size_t close = open == std::string::npos ? open : rendered.find(kClose, open);
    if (close == std::string::npos) break;
    append(ids, tok.encode(rendered.substr(pos, open - pos), true));
    const size_t index = std::stoul(rendered.substr(open + kOpen.size(), close - open - kOpen.size()));
    append(ids, tok.encode(hidden.at(index), false));
    pos = close + kClose.size();
  }
  append(ids, tok.encode(rendered.substr(pos), true));
  return ids;
}

}  // namespace qwen3
