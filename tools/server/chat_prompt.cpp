// Chat messages -> prompt ids, where only the template's own control tokens are special.
//
// Rendering the template and tokenizing the result with special-token parsing would turn a user
// who types "<|im_end|>" into a real end-of-turn token (prompt injection). Instead the template is
// rendered with each user, system and tool content replaced by a placeholder, so every control
// token left in the rendered text is the template's own. The control tokens found there split the
// prompt into runs, and each run, with the real contents put back, is encoded without special
// parsing. That is exactly how the tokenizer treats text between added tokens, so the ids equal
// Hugging Face's apply_chat_template whenever the contents hold no control-token text.
//
// Assistant turns are left as they are: the template itself splits their "<think>" blocks, and
// they are the model's own earlier output.
#include "server/chat_prompt.h"

#include <string_view>

namespace qwen3::server {

namespace {

// U+E000 <index> U+E001: private-use characters no template emits.
constexpr std::string_view open_mark = "\xEE\x80\x80", close_mark = "\xEE\x80\x81";

bool is_placeholdered(const nlohmann::json& message) {
  const auto role = message.value("role", "");
  return role != "assistant" && message.contains("content") && message["content"].is_string();
}

// An id the encoder produced from added-token text: its text alone would not encode back to it.
bool is_control(const Tokenizer& tokenizer, TokenId id) {
  auto plain = tokenizer.encode(tokenizer.token_bytes(id), false);
  return !(plain.size() == 1 && plain[0] == id);
}

}  // namespace

ChatPrompt tokenize_chat(const ChatTemplate& chat, const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                         const ChatOptions& options) {
  nlohmann::ordered_json masked = messages;
  std::vector<std::string> contents;
  for (auto& m : masked)
    if (is_placeholdered(m)) {
      contents.push_back(m["content"].get<std::string>());
      m["content"] = std::string(open_mark) + std::to_string(contents.size() - 1) + std::string(close_mark);
    }
  const std::string rendered = chat.render(masked, options);

  ChatPrompt out;
  std::string run;  // text since the last control token, contents restored
  auto flush_run = [&] {
    auto ids = tokenizer.encode(run, false);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.text += run;
    run.clear();
  };
  // Template text: its control tokens end runs; byte offsets come from the tokens' own bytes.
  auto add_template_text = [&](std::string_view text) {
    const auto ids = tokenizer.encode(text, true);
    size_t length = 0;
    for (TokenId id : ids) length += tokenizer.token_bytes(id).size();
    if (length != text.size()) {  // Unicode normalization changed the bytes: no offsets to split at
      flush_run();
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.text += text;
      return;
    }
    size_t pos = 0;
    for (TokenId id : ids) {
      const auto bytes = tokenizer.token_bytes(id);
      if (is_control(tokenizer, id)) {
        flush_run();
        out.ids.push_back(id);
        out.text += bytes;
      } else {
        run += text.substr(pos, bytes.size());
      }
      pos += bytes.size();
    }
  };

  size_t pos = 0;
  while (pos < rendered.size()) {
    size_t open = rendered.find(open_mark, pos);
    size_t close = open == std::string::npos ? open : rendered.find(close_mark, open);
    if (close == std::string::npos) {
      add_template_text(std::string_view(rendered).substr(pos));
      break;
    }
    add_template_text(std::string_view(rendered).substr(pos, open - pos));
    const auto index = std::stoul(rendered.substr(open + open_mark.size(), close - open - open_mark.size()));
    run += contents.at(index);
    pos = close + close_mark.size();
  }
  flush_run();
  return out;
}

}  // namespace qwen3::server
