// OpenAI request bodies -> a validated prompt and GenerationOptions; every bad field is a 400 naming it.
#include "server/openai_request.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"
#include "server/api_error.h"

namespace qwen3::server {

// Ordered: tool definitions reach the template, and so the prompt, in the client's key order (as HF).
using json = nlohmann::ordered_json;

namespace {

// A field of the body, absent or null -> nullopt; present with another type -> 400.
std::optional<json> field(const json& body, const char* key, bool (json::*is_type)() const noexcept,
                          const char* type_name) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!((*it).*is_type)()) throw ApiError(400, std::string("'") + key + "' must be " + type_name, key);
  return *it;
}

template <class T>
std::optional<T> number(const json& body, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    auto v = field(body, key, &json::is_number_integer, "an integer");
    if (!v) return std::nullopt;
    if (v->is_number_unsigned() ? v->get<uint64_t>() > uint64_t(std::numeric_limits<T>::max())
                                : v->get<int64_t>() < int64_t(std::numeric_limits<T>::min()) ||
                                      v->get<int64_t>() > int64_t(std::numeric_limits<T>::max()))
      throw ApiError(400, std::string("'") + key + "' is out of range", key);
    return v->get<T>();
  } else {
    auto v = field(body, key, &json::is_number, "a number");
    return v ? std::optional<T>(v->get<T>()) : std::nullopt;
  }
}

std::optional<bool> boolean(const json& body, const char* key) {
  auto v = field(body, key, &json::is_boolean, "a boolean");
  return v ? std::optional<bool>(v->get<bool>()) : std::nullopt;
}

void check_range(const char* key, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi))
    throw ApiError(400, std::string("'") + key + "' must be between " + nlohmann::json(lo).dump() + " and " +
                            nlohmann::json(hi).dump() + ", got " + nlohmann::json(value).dump(), key);
}

SamplingParams parse_sampling(const json& body, const SamplingParams& defaults) {
  SamplingParams p = defaults;
  if (auto v = number<float>(body, "temperature")) p.temperature = *v;
  if (auto v = number<float>(body, "top_p")) p.top_p = *v;
  if (auto v = number<int>(body, "top_k")) p.top_k = *v == -1 ? 0 : *v;  // vLLM spells "off" as -1
  if (auto v = number<float>(body, "min_p")) p.min_p = *v;
  if (auto v = number<float>(body, "presence_penalty")) p.presence_penalty = *v;
  if (auto v = number<float>(body, "frequency_penalty")) p.frequency_penalty = *v;
  if (auto v = number<float>(body, "repetition_penalty")) p.repetition_penalty = *v;
  // Without a seed every request draws differently, as OpenAI's do.
  if (auto v = number<int64_t>(body, "seed")) p.seed = static_cast<uint64_t>(*v);
  else p.seed = std::random_device{}() * 0x100000000ull + std::random_device{}();
  check_range("temperature", p.temperature, 0, 100);
  check_range("presence_penalty", p.presence_penalty, -2, 2);
  check_range("frequency_penalty", p.frequency_penalty, -2, 2);
  return p;
}

std::vector<std::string> parse_stop(const json& body) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_string()) return {it->get<std::string>()};
  if (!it->is_array() || it->size() > 16) throw ApiError(400, "'stop' must be a string or an array of at most 16 strings", "stop");
  std::vector<std::string> stop;
  for (auto& s : *it) {
    if (!s.is_string()) throw ApiError(400, "'stop' must be a string or an array of strings", "stop");
    stop.push_back(s.get<std::string>());
  }
  return stop;
}

// OpenAI content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::string content_text(const json& content, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError(400, "'" + param + "' must be a string or an array of text parts", param);
  std::string text;
  for (auto& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") || !part["text"].is_string())
      throw ApiError(400, "'" + param + "': only text parts ({\"type\": \"text\", \"text\": ...}) are supported", param);
    text += part["text"].get<std::string>();
  }
  return text;
}

// Checks roles and content types; returns messages the template can render (string contents).
json normalize_messages(const json& body) {
  auto it = body.find("messages");
  if (it == body.end()) throw ApiError(400, "'messages' is required", "messages");
  if (!it->is_array()) throw ApiError(400, "'messages' must be an array", "messages");
  if (it->empty()) throw ApiError(400, "'messages' must not be empty", "messages");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw ApiError(400, "'" + param + "' must be an object", param);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) throw ApiError(400, "'" + param + ".role' must be a string", param + ".role");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw ApiError(400, "'" + param + ".role': unknown role '" + r + "' (system, developer, user, assistant, tool)",
                     param + ".role");
    json n = m;
    n["role"] = r;
    auto content = m.find("content");
    const bool has_calls = m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty();
    if (content == m.end() || content->is_null()) {
      if (r != "assistant" || !has_calls) throw ApiError(400, "'" + param + ".content' is required", param + ".content");
      n["content"] = "";
    } else {
      n["content"] = content_text(*content, i);
    }
    if (n.contains("reasoning_content") && !n["reasoning_content"].is_null() && !n["reasoning_content"].is_string())
      throw ApiError(400, "'" + param + ".reasoning_content' must be a string", param + ".reasoning_content");
    out.push_back(std::move(n));
  }
  return out;
}

// The prompt of /v1/completions: a string, token ids, or a one-element array of either.
std::vector<TokenId> completion_prompt(const json& body, const ServedModel& model) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw ApiError(400, "'prompt' is required", "prompt");
  json prompt = *it;
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) prompt = prompt[0];
  if (prompt.is_string()) return model.tokenizer->encode(prompt.get<std::string>(), true);
  if (!prompt.is_array() || prompt.empty())
    throw ApiError(400, "'prompt' must be a string or an array of token ids (one prompt per request)", "prompt");
  std::vector<TokenId> ids;
  for (auto& id : prompt) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.vocab_size)
      throw ApiError(400, "'prompt' token ids must be integers in [0, " + std::to_string(model.vocab_size) + ")", "prompt");
    ids.push_back(id.get<TokenId>());
  }
  return ids;
}

// enable_thinking at the top level or inside chat_template_kwargs (as vLLM and SGLang accept).
bool thinking_enabled(const json& body) {
  if (auto v = boolean(body, "enable_thinking")) return *v;
  if (auto kwargs = field(body, "chat_template_kwargs", &json::is_object, "an object"))
    if (auto v = boolean(*kwargs, "enable_thinking")) return *v;
  return true;  // the Qwen3 template's default
}

void parse_logprobs(Endpoint endpoint, const json& body, ApiRequest& r) {
  if (endpoint == Endpoint::chat) {
    r.options.logprobs = boolean(body, "logprobs").value_or(false);
    r.options.top_logprobs = number<int>(body, "top_logprobs").value_or(0);
    check_range("top_logprobs", r.options.top_logprobs, 0, 20);
    if (r.options.top_logprobs > 0 && !r.options.logprobs)
      throw ApiError(400, "'top_logprobs' requires 'logprobs': true", "top_logprobs");
  } else if (auto n = number<int>(body, "logprobs")) {  // legacy: the number of alternatives
    check_range("logprobs", *n, 0, 20);
    r.options.logprobs = true;
    r.options.top_logprobs = *n;
  }
  r.tokens_as_ids = boolean(body, "return_tokens_as_token_ids").value_or(false);
}

ApiRequest parse_body(Endpoint endpoint, const json& body, const ServedModel& model) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  field(body, "model", &json::is_string, "a string");
  if (auto n = number<int>(body, "n"); n && *n != 1) throw ApiError(400, "only 'n': 1 is supported", "n");
  if (auto n = number<int>(body, "best_of"); n && *n != 1) throw ApiError(400, "only 'best_of': 1 is supported", "best_of");
  if (boolean(body, "echo").value_or(false)) throw ApiError(400, "'echo' is not supported", "echo");
  r.stream = boolean(body, "stream").value_or(false);
  if (auto options = field(body, "stream_options", &json::is_object, "an object"))
    r.include_usage = boolean(*options, "include_usage").value_or(false);
  r.options.sampling = parse_sampling(body, model.defaults);
  r.options.stop = parse_stop(body);
  r.options.eos = boolean(body, "ignore_eos").value_or(false) ? std::vector<TokenId>{} : model.eos;
  parse_logprobs(endpoint, body, r);

  if (endpoint == Endpoint::chat) {
    ChatOptions chat;
    chat.enable_thinking = thinking_enabled(body);
    if (auto tools = field(body, "tools", &json::is_array, "an array")) chat.tools = *tools;
    r.prompt = encode_chat(*model.chat, *model.tokenizer, normalize_messages(body), chat);
    r.thinking = chat.enable_thinking;
    r.thinking_opened = model.tokenizer->decode(r.prompt).ends_with("<think>\n");
  } else {
    r.prompt = completion_prompt(body, model);
  }
  const char* prompt_param = endpoint == Endpoint::chat ? "messages" : "prompt";
  if (r.prompt.empty()) throw ApiError(400, "the prompt is empty", prompt_param);
  if (r.prompt.size() + 1 > size_t(model.context))
    throw ApiError(400, "the prompt has " + std::to_string(r.prompt.size()) + " tokens; this server's context is " +
                            std::to_string(model.context) + " tokens (prompt plus at least one new token)",
                   prompt_param, "context_length_exceeded");
  auto max_tokens = number<int>(body, "max_completion_tokens");
  if (!max_tokens) max_tokens = number<int>(body, "max_tokens");
  r.options.max_tokens = max_tokens.value_or(model.context - static_cast<int>(r.prompt.size()));
  if (r.options.max_tokens < 0) throw ApiError(400, "'max_tokens' must be >= 0", "max_tokens");
  r.options.validate();
  return r;
}

}  // namespace

ApiRequest parse_request(Endpoint endpoint, std::string_view body, const ServedModel& model) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
  try {
    return parse_body(endpoint, j, model);
  } catch (const Error& e) {  // the library's own validation (sampling values, template input)
    throw ApiError(400, e.what());
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("malformed request: ") + e.what());
  }
}

}  // namespace qwen3::server
