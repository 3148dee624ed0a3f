// `qwen3 template MODEL_DIR conversation.json`: prints the prompt the model's chat template
// renders.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"

namespace qwen3::cli {
namespace {

struct TemplateArgs {
  std::string model_dir;
  std::string conversation;
  bool no_think = false;
  bool no_generation_prompt = false;
};

void run_template(const TemplateArgs& args) {
  std::ifstream in(args.conversation, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, args.conversation + ": cannot open");
  nlohmann::ordered_json doc;  // ordered: tojson must print tool schemas in the user's key order
  try {
    doc = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, args.conversation + ": malformed JSON: " + e.what());
  }
  ChatOptions options;
  options.enable_thinking = !args.no_think;
  options.add_generation_prompt = !args.no_generation_prompt;
  nlohmann::ordered_json messages = doc;
  if (doc.is_object()) {
    if (!doc.contains("messages"))
      throw Error(ErrorKind::format, args.conversation + ": no \"messages\" field");
    messages = doc["messages"];
    if (doc.contains("tools")) options.tools = doc["tools"];
    // More template variables (Qwen3.5's add_vision_id), named as vLLM's request field.
    if (doc.contains("chat_template_kwargs")) options.variables = doc["chat_template_kwargs"];
  }
  const std::string prompt = ChatTemplate::load(args.model_dir).render(messages, options);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
}

}  // namespace

void add_template_command(CLI::App& app) {
  auto args = std::make_shared<TemplateArgs>();
  auto* cmd = app.add_subcommand(
      "template", "Print the prompt the model's chat template renders for a conversation");
  cmd->add_option(
         "MODEL_DIR", args->model_dir,
         "Hugging Face model folder (chat_template.jinja or tokenizer_config.json), or a GGUF "
         "file (tokenizer.chat_template)")
      ->required();
  cmd->add_option("CONVERSATION", args->conversation,
                  "OpenAI-style messages: a JSON array, or {\"messages\": [...], \"tools\": [...], "
                  "\"chat_template_kwargs\": {...}}")
      ->required();
  cmd->add_flag("--no-think", args->no_think, "Render with enable_thinking=false");
  cmd->add_flag("--no-generation-prompt", args->no_generation_prompt,
                "Do not open the assistant's turn");
  cmd->callback([args] { run_template(*args); });
}

}  // namespace qwen3::cli
