// Splits a Qwen3 or Qwen3.5 reply into its thinking (between <think> and </think>) and its answer,
// as text streams in.
#pragma once

#include <string>
#include <string_view>

namespace qwen3 {

// Whether a rendered prompt leaves the reply inside a <think> block: it ends with "<think>" and
// white space. Qwen3.5's template writes "<think>\n" after the assistant header itself when
// thinking is on (and "<think>\n\n</think>\n\n" when off); Qwen3's leaves the tag to the model.
bool prompt_opens_think(std::string_view prompt);

class ThinkSplitter {
 public:
  struct Piece {
    std::string reasoning, content;
  };

  // `enabled` false: everything is content. `opened_by_prompt`: the prompt already ends inside a
  // <think> block (templates that write "<think>\n" themselves), so the reply starts as reasoning;
  // otherwise the reply is reasoning only when it begins with <think>.
  ThinkSplitter(bool enabled, bool opened_by_prompt);

  Piece push(std::string_view text);
  Piece finish();  // whatever was held back

 private:
  enum class State { detect, reasoning, content };
  Piece drain(bool final);

  State state_;
  bool after_close_ = false;  // just past </think>: the "\n\n" before the answer is dropped
  std::string held_;          // text that may be the start of a tag
};

}  // namespace qwen3
