// ChatTemplate: loads the model's Jinja chat template, checks messages, and renders HF's variables.
#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "chat/interpreter.h"
#include "chat/parser.h"
#include "io/gguf.h"
#include "qwen3/chat.h"
#include "qwen3/error.h"

namespace qwen3 {

struct ChatTemplate::Program {
  std::string source;
  chat::Template tree;
  chat::Json special_tokens =
      chat::Json::object();  // bos_token / eos_token from tokenizer_config.json
};

namespace {

[[noreturn]] void bad_message(size_t index, const std::string& what) {
  throw Error(ErrorKind::invalid_argument, "messages[" + std::to_string(index) + "]: " + what);
}

bool content_parts(const chat::Json& content) {
  return content.is_array() &&
         std::all_of(content.begin(), content.end(), [](const auto& p) { return p.is_object(); });
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
    // OpenAI clients send null content beside tool calls; Qwen3's template concatenates it as
    // text. A list of parts is left to the template: Qwen3.5's renders text and image parts,
    // Qwen3's fails on it with a line:col error.
    if (r == "assistant" && has_calls && (content == m.end() || content->is_null())) {
      m["content"] = "";
    } else if (content == m.end() || !(content->is_string() || content_parts(*content))) {
      bad_message(i, "field 'content' must be a string or a list of content parts (objects)");
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
  program_->source = std::move(source);
}

ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

const std::string& ChatTemplate::source() const { return program_->source; }

namespace {

nlohmann::json read_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, file.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, file.string() + ": malformed JSON: " + e.what());
  }
}

// The "chat_template" of tokenizer_config.json: a string, or a list of named templates of which
// HF renders the one called "default".
std::string config_template(const nlohmann::json& config, const std::filesystem::path& file,
                            const std::filesystem::path& jinja_file) {
  auto field = config.is_object() ? config.find("chat_template") : config.end();
  const nlohmann::json* source = field == config.end() ? nullptr : &*field;
  if (source && source->is_array()) {
    const nlohmann::json* chosen = nullptr;
    for (const auto& named : *source) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template"))
        chosen = &named["template"];
    }
    source = chosen;
  }
  if (!source || !source->is_string()) {
    throw Error(ErrorKind::format,
                file.string() +
                    ": no string field 'chat_template' (or a list entry named default), and no " +
                    jinja_file.filename().string());
  }
  return source->get<std::string>();
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, file.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

namespace {

// A template's text, where it came from (for errors), and the special tokens HF passes it.
struct TemplateSource {
  std::string text;
  std::string file;
  nlohmann::json config;  // tokenizer_config.json's bos_token and eos_token, where they are
};

TemplateSource folder_template(const std::filesystem::path& model_dir) {
  // HF reads tokenizer_config.json (where there is one) for the special tokens either way; a
  // chat_template.jinja beside it replaces the config's template ("clobbers", in transformers'
  // words).
  const auto config_file = model_dir / "tokenizer_config.json";
  const auto jinja_file = model_dir / "chat_template.jinja";
  std::error_code ec;
  const bool has_jinja = std::filesystem::is_regular_file(jinja_file, ec);
  TemplateSource t;
  t.config = has_jinja && !std::filesystem::exists(config_file, ec) ? nlohmann::json::object()
                                                                    : read_config(config_file);
  t.file = (has_jinja ? jinja_file : config_file).string();
  t.text = has_jinja ? read_text(jinja_file) : config_template(t.config, config_file, jinja_file);
  return t;
}

// A GGUF file's tokenizer.chat_template, with the tokens of its bos and eos ids as llama.cpp
// passes them to the template.
TemplateSource gguf_template(const std::filesystem::path& file) {
  const io::GgufFile f = io::GgufFile::open(file);
  if (!f.has_key("tokenizer.chat_template"))
    throw Error(ErrorKind::format, f.name() +
                                       ": no chat template in the metadata "
                                       "(tokenizer.chat_template)");
  TemplateSource t{std::string(f.get_string("tokenizer.chat_template")), f.name(),
                   nlohmann::json::object()};
  const auto tokens = f.has_key("tokenizer.ggml.tokens")
                          ? f.get_string_array("tokenizer.ggml.tokens")
                          : std::vector<std::string_view>();
  for (auto [key, id_key] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                             std::pair{"eos_token", "tokenizer.ggml.eos_token_id"}})
    if (f.has_key(id_key) && f.get_int(id_key) >= 0 && size_t(f.get_int(id_key)) < tokens.size())
      t.config[key] = std::string(tokens[size_t(f.get_int(id_key))]);
  return t;
}

}  // namespace

ChatTemplate ChatTemplate::load(const std::filesystem::path& model) {
  TemplateSource source = io::is_gguf_file(model) ? gguf_template(model) : folder_template(model);
  std::optional<ChatTemplate> tmpl;
  try {
    tmpl.emplace(std::move(source.text));
  } catch (const Error& e) {
    throw Error(e.kind(), source.file + ": " + e.what());
  }
  copy_token(source.config, "bos_token", tmpl->program_->special_tokens);
  copy_token(source.config, "eos_token", tmpl->program_->special_tokens);
  return std::move(*tmpl);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const ChatOptions& options) const {
  return render(chat::Json(messages), options);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatOptions& options) const {
  chat::Json vars = program_->special_tokens;
  // transformers' render_jinja_template passes tools=None and documents=None when absent (not
  // undefined): templates written against it test `tools is not none`.
  if (!options.tools.is_null() && !options.tools.is_array()) {
    throw Error(ErrorKind::invalid_argument, "tools: expected an array");
  }
  if (chat::nesting_depth(options.tools) > chat::kMaxDepth) {
    throw Error(ErrorKind::invalid_argument,
                "tools: nested deeper than " + std::to_string(chat::kMaxDepth) + " levels");
  }
  vars["enable_thinking"] = options.enable_thinking;
  if (!options.variables.is_null()) {
    if (!options.variables.is_object())
      throw Error(ErrorKind::invalid_argument, "template variables: expected an object");
    if (chat::nesting_depth(options.variables) > chat::kMaxDepth) {
      throw Error(ErrorKind::invalid_argument, "template variables: nested deeper than " +
                                                   std::to_string(chat::kMaxDepth) + " levels");
    }
    for (const auto& [name, value] : options.variables.items()) {
      if (name == "messages" || name == "tools" || name == "documents" ||
          name == "add_generation_prompt") {
        throw Error(ErrorKind::invalid_argument,
                    "template variables: '" + name + "' is set by the request itself");
      }
      vars[name] = value;
    }
  }
  vars["messages"] = check_messages(messages);
  vars["tools"] = options.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = options.add_generation_prompt;
  return chat::render(program_->tree, vars);
}

}  // namespace qwen3
