// Splits a Qwen3 reply into its thinking and its answer, holding back text that may start a tag.
#include "qwen3/reasoning.h"

#include <algorithm>

namespace qwen3 {

namespace {

constexpr std::string_view open_tag = "<think>", close_tag = "</think>";

// The length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(tag.size() - 1, text.size()); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

bool prompt_opens_think(std::string_view prompt) {
  const size_t end = prompt.find_last_not_of(" \t\r\n");
  return end != std::string_view::npos && prompt.substr(0, end + 1).ends_with(open_tag);
}

ThinkSplitter::ThinkSplitter(bool enabled, bool opened_by_prompt)
    : state_(!enabled           ? State::content
             : opened_by_prompt ? State::reasoning
                                : State::detect) {}

ThinkSplitter::Piece ThinkSplitter::push(std::string_view text) {
  held_ += text;
  return drain(false);
}

ThinkSplitter::Piece ThinkSplitter::finish() { return drain(true); }

ThinkSplitter::Piece ThinkSplitter::drain(bool final) {
  Piece out;
  for (;;) {
    if (state_ == State::detect) {
      if (held_.starts_with(open_tag)) {
        held_.erase(0, open_tag.size());
        state_ = State::reasoning;
      } else if (!final && open_tag.starts_with(held_)) {
        return out;  // could still become <think>
      } else {
        state_ = State::content;
      }
    } else if (state_ == State::reasoning) {
      size_t end = held_.find(close_tag);
      if (end == std::string::npos) {
        size_t keep = final ? 0 : partial_tag(held_, close_tag);
        out.reasoning += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
      }
      out.reasoning += held_.substr(0, end);
      held_.erase(0, end + close_tag.size());
      state_ = State::content;
      after_close_ = true;
    } else {
      if (after_close_) {
        size_t start = held_.find_first_not_of('\n');
        held_.erase(0, start == std::string::npos ? held_.size() : start);
        after_close_ = held_.empty();
      }
      out.content += held_;
      held_.clear();
      return out;
    }
  }
}

}  // namespace qwen3
