// ChatTemplate: loads the model's Jinja chat template, checks messages, and renders HF's variables.
#include <fstream>
#include <optional>
#include <sstream>

#include "chat/interpreter.h"
#include "chat/parser.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"

namespace qwen3 {

struct ChatTemplate::Program {
  chat::Template tree;
  chat::Json special_tokens =
      chat::Json::object();  // bos_token / eos_token from tokenizer_config.json
};

namespace {

[[noreturn]] void bad_message(size_t index, const std::string& what) {
  throw Error(ErrorKind::invalid_argument, "messages[" + std::to_string(index) + "]: " + what);
}

// OpenAI-form messages: HF would fail deep inside the template on these, with a far worse message.
chat::Json check_messages(const chat::Json& messages) {
  if (!messages.is_array())
    throw Error(ErrorKind::invalid_argument,
                "messages: expected an array, got " + std::string(messages.type_name()));
  if (chat::nesting_depth(messages) > chat::kMaxDepth) {
    throw Error(ErrorKind::invalid_argument,
                "messages: nested deeper than " + std::to_string(chat::kMaxDepth) + " levels");
  }
  chat::Json out = messages;
  for (size_t i = 0; i < out.size(); ++i) {
    auto& m = out[i];
    if (!m.is_object()) bad_message(i, "expected an object, got " + std::string(m.type_name()));
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_message(i, "missing string field 'role'");
    const auto& r = role->get_ref<const std::string&>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
      bad_message(i, "unknown role '" + r + "' (expected system, user, assistant or tool)");
    }
    auto tool_calls = m.find("tool_calls");
    const bool has_calls = tool_calls != m.end() && !tool_calls->is_null();
    if (has_calls && !tool_calls->is_array()) bad_message(i, "field 'tool_calls' must be an array");
    auto content = m.find("content");
    // OpenAI clients send null content beside tool calls; the template concatenates it as text.
    if (r == "assistant" && has_calls && (content == m.end() || content->is_null())) {
      m["content"] = "";
    } else if (content == m.end() || !content->is_string()) {
      bad_message(i, "field 'content' must be a string");
    }
    auto reasoning = m.find("reasoning_content");
    if (reasoning != m.end() && !reasoning->is_null() && !reasoning->is_string()) {
      bad_message(i, "field 'reasoning_content' must be a string or null");
    }
  }
  return out;
}

// tokenizer_config.json spells special tokens as strings or as {"content": ...} objects.
void copy_token(const nlohmann::json& config, const char* key, chat::Json& out) {
  auto it = config.find(key);
  if (it == config.end()) return;
  if (it->is_string()) out[key] = it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    out[key] = (*it)["content"].get<std::string>();
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source) : program_(std::make_unique<Program>()) {
  program_->tree = chat::parse(source);
}

ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

ChatTemplate ChatTemplate::load(const std::filesystem::path& model_dir) {
  const auto file = model_dir / "tokenizer_config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, file.string() + ": cannot open");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, file.string() + ": malformed JSON: " + e.what());
  }
  auto field = config.is_object() ? config.find("chat_template") : config.end();
  const nlohmann::json* source = field == config.end() ? nullptr : &*field;
  if (source && source->is_array()) {
    // Some models ship several named templates; HF renders the one called "default".
    const nlohmann::json* chosen = nullptr;
    for (const auto& named : *source) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template"))
        chosen = &named["template"];
    }
    source = chosen;
  }
  if (!source || !source->is_string()) {
    throw Error(
        ErrorKind::format,
        file.string() + ": no string field 'chat_template' (or a list entry named default)");
  }
  std::optional<ChatTemplate> tmpl;
  try {
    tmpl.emplace(source->get<std::string>());
  } catch (const Error& e) {
    throw Error(e.kind(), file.string() + ": " + e.what());
  }
  copy_token(config, "bos_token", tmpl->program_->special_tokens);
  copy_token(config, "eos_token", tmpl->program_->special_tokens);
  return std::move(*tmpl);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const ChatOptions& options) const {
  return render(chat::Json(messages), options);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatOptions& options) const {
  chat::Json vars = program_->special_tokens;
  vars["messages"] = check_messages(messages);
  // transformers' render_jinja_template passes tools=None and documents=None when absent (not
  // undefined): templates written against it test `tools is not none`.
  if (!options.tools.is_null() && !options.tools.is_array()) {
    throw Error(ErrorKind::invalid_argument, "tools: expected an array");
  }
  if (chat::nesting_depth(options.tools) > chat::kMaxDepth) {
    throw Error(ErrorKind::invalid_argument,
                "tools: nested deeper than " + std::to_string(chat::kMaxDepth) + " levels");
  }
  vars["tools"] = options.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = options.add_generation_prompt;
  vars["enable_thinking"] = options.enable_thinking;
  return chat::render(program_->tree, vars);
}

}  // namespace qwen3
