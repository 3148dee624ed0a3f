// Tokenizing a rendered conversation without letting message text become control tokens.
#include <string>
#include <vector>

#include "qwen3/chat.h"

namespace qwen3 {

namespace {

// U+E000 <index> U+E001: private-use characters that no template or tokenizer treats specially.
const std::string kOpen = "\xEE\x80\x80", kClose = "\xEE\x80\x81";

// Assistant history may hold added tokens that are not special (<think> blocks, which the
// template itself strips); every other message may hold none: to its text they are plain text.
bool must_hide(const Tokenizer& tok, const std::string& text, bool assistant) {
  const std::vector<TokenId> ids = tok.encode(text, true);
  if (!assistant) return ids != tok.encode(text, false);
  for (TokenId id : ids)
    if (tok.is_special(id)) return true;
  return false;
}

// Replaces every string of `j` that must be hidden by a numbered placeholder.
void hide(nlohmann::ordered_json& j, const Tokenizer& tok, bool assistant,
          std::vector<std::string>& hidden) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (!must_hide(tok, s, assistant)) return;
    j = kOpen + std::to_string(hidden.size()) + kClose;
    hidden.push_back(s);
  } else if (j.is_structured()) {
    for (auto& v : j) hide(v, tok, assistant, hidden);
  }
}

void append(std::vector<TokenId>& out, const std::vector<TokenId>& ids) {
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace

std::vector<TokenId> encode_chat(const ChatTemplate& chat_template, const Tokenizer& tok,
                                 const nlohmann::ordered_json& messages,
                                 const ChatOptions& options) {
  nlohmann::ordered_json safe = messages;
  std::vector<std::string> hidden;
  for (auto& message : safe) {
    const bool assistant = message.is_object() && message.value("role", "") == "assistant";
    hide(message, tok, assistant, hidden);
  }
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
    const size_t index =
        std::stoul(rendered.substr(open + kOpen.size(), close - open - kOpen.size()));
    append(ids, tok.encode(hidden.at(index), false));
    pos = close + kClose.size();
  }
  append(ids, tok.encode(rendered.substr(pos), true));
  return ids;
}

}  // namespace qwen3
