// `qwen3 chat MODEL`: an interactive conversation. Each turn renders the whole conversation
// with the model's chat template, reuses the KV cache for the prefix it already holds, and
// prefills only what is new.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <span>

#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/model_path.h"
#include "cli/sampling_flags.h"
#include "cli/spec_flags.h"
#include "qwen3/chat.h"
#include "qwen3/generation.h"
#include "qwen3/reasoning.h"

namespace qwen3::cli {

namespace {

std::atomic<bool> interrupted{false};
void on_sigint(int) { interrupted = true; }

// Streams model text, showing the <think> block dimmed (or not at all), and keeps the reply's
// reasoning and answer apart for the conversation history.
class ReplyPrinter {
 public:
  // `opened`: the prompt already opened the <think> block (Qwen3.5's template).
  ReplyPrinter(bool colour, bool hide_think, bool thinking, bool opened)
      : colour_(colour), hide_(hide_think), splitter_(thinking, opened) {}

  void print(const std::string& text) { show(splitter_.push(text)); }
  void finish() {
    show(splitter_.finish());
    if (in_think_) close_think();
    std::fputs("\n", stdout);
  }
  // The assistant message for the history: reasoning kept apart, as the template expects.
  nlohmann::ordered_json message() const {
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \n"));
      s.erase(s.find_last_not_of(" \n") + 1);
      return s;
    };
    nlohmann::ordered_json m = {{"role", "assistant"}, {"content", trim(answer_)}};
    if (saw_think_) m["reasoning_content"] = trim(reasoning_);
    return m;
  }

 private:
  void show(const ThinkSplitter::Piece& piece) {
    if (!piece.reasoning.empty()) {
      reasoning_ += piece.reasoning;
      saw_think_ = true;
      if (!hide_) {
        if (!in_think_) std::fputs(colour_ ? "\033[2m<think>" : "<think>", stdout);
        in_think_ = true;
        std::fputs(piece.reasoning.c_str(), stdout);
      }
    }
    if (!piece.content.empty()) {
      if (in_think_) close_think();
      answer_ += piece.content;
      std::fputs(piece.content.c_str(), stdout);
    }
    std::fflush(stdout);
  }
  void close_think() {
    std::fputs(colour_ ? "</think>\033[0m\n" : "</think>\n", stdout);
    in_think_ = false;
  }

  bool colour_, hide_, in_think_ = false, saw_think_ = false;
  ThinkSplitter splitter_;
  std::string reasoning_, answer_;
};

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

void add_chat_command(CLI::App& app) {
  struct Args {
    std::string model, system;
    SamplingFlags sampling;
    int ctx = 8192;
    LoadFlags load;
    SpecFlags spec;
    bool no_think = false, hide_think = false, verbose = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "chat",
      "Chat with the model; /think and /no_think switch thinking, /exit or Ctrl-D quits, "
      "Ctrl-C stops an answer. Reads turns from stdin when it is not a terminal");
  cmd->add_option("model", a->model, kModelArgumentHelp)->required();
  cmd->add_option("-s,--system", a->system, "System prompt");
  a->sampling.max_tokens = 4096;
  a->sampling.add_to(*cmd);
  cmd->add_flag("--no-think", a->no_think, "Start with Qwen3's thinking mode off");
  cmd->add_flag("--hide-think", a->hide_think, "Do not show the <think> block");
  cmd->add_option("-c,--ctx", a->ctx, "Context length of the whole conversation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  a->load.add_to(*cmd);
  a->spec.add_to(*cmd);
  cmd->add_flag("-v,--verbose", a->verbose,
                "Print each turn's prompt token ids, cache reuse and speculation");
  cmd->callback([a] {
    const auto dir = resolve_model(a->model);
    auto model = Model::load(dir, a->load.options);
    auto tokenizer = Tokenizer::load(dir);
    a->spec.load(*model, tokenizer, a->load.options);
    auto tmpl = ChatTemplate::load(dir);
    const bool tty_in = isatty(0), colour = isatty(1);
    const GenerationOptions options = a->sampling.options(dir, model->config());
    std::signal(SIGINT, on_sigint);

    Sequence seq(*model, std::min(a->ctx, model->config().max_position_embeddings));
    std::vector<TokenId> cached;  // the tokens whose keys and values `seq` holds
    auto messages = nlohmann::ordered_json::array();
    if (!a->system.empty()) messages.push_back({{"role", "system"}, {"content", a->system}});
    bool thinking = !a->no_think;
    if (tty_in)
      std::fprintf(stderr, "%s — thinking %s. /think, /no_think, /exit\n",
                   model->config().summary(model->name()).c_str(), thinking ? "on" : "off");
    std::string line;
    for (;;) {
      if (tty_in) std::fputs(colour ? "\033[1m> \033[0m" : "> ", stdout), std::fflush(stdout);
      interrupted = false;
      if (!std::getline(std::cin, line)) break;
      if (line == "/exit" || line == "/quit") break;
      if (line.empty()) continue;
      // Qwen3's soft switches: the text stays in the message (the model is trained on it) and
      // the mode sticks for later turns.
      if (line.find("/no_think") != std::string::npos) thinking = false;
      else if (line.find("/think") != std::string::npos) thinking = true;
      messages.push_back({{"role", "user"}, {"content", line}});
      ChatOptions chat;
      chat.enable_thinking = thinking;
      const std::vector<TokenId> ids = encode_chat(tmpl, tokenizer, messages, chat);
      const size_t reused = seq.truncate(static_cast<int>(common_prefix(cached, ids)));
      if (a->verbose) {
        std::fprintf(stderr, "[prompt ids:");
        for (TokenId id : ids) std::fprintf(stderr, " %d", id);
        std::fprintf(stderr, "]\n[reused %zu cached tokens, prefilling %zu]\n", reused,
                     ids.size() - reused);
      }
      Generation g(seq, tokenizer, std::vector<TokenId>(ids.begin() + reused, ids.end()), options);
      a->spec.attach(g, *model, seq);
      // A few tokens show whether the template itself wrote "<think>\n" at the end.
      const auto tail = std::span<const TokenId>(ids).last(std::min<size_t>(ids.size(), 8));
      ReplyPrinter printer(colour, a->hide_think, thinking,
                           thinking && prompt_opens_think(tokenizer.decode(tail)));
      const auto t0 = std::chrono::steady_clock::now();
      generate(*model, g, [&](const GeneratedToken& t) {
        printer.print(t.text);
        if (interrupted) g.cancel();
      });
      printer.finish();
      if (const auto events = describe_reasoning_events(g.reasoning()->events()); !events.empty())
        std::fprintf(stderr, "[%s]\n", events.c_str());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (a->verbose || interrupted)
        std::fprintf(stderr, "[%s%d tokens in %.2f s, %.1f tok/s]\n",
                     interrupted ? "stopped: " : "", g.completion_tokens(), s,
                     g.completion_tokens() / s);
      if (a->verbose && g.speculation())
        std::fprintf(stderr, "[%s]\n", speculation_summary(*g.speculation()).c_str());
      messages.push_back(printer.message());
      cached = ids;
      const auto& gen = g.generated();  // all but the last sampled token went through the model
      if (!gen.empty()) cached.insert(cached.end(), gen.begin(), gen.end() - 1);
    }
  });
}

}  // namespace qwen3::cli
