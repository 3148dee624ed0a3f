// OpenAI request bodies -> a validated prompt and GenerationOptions; every bad field is a 400
// naming it.
#include "server/openai_request.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"
#include "server/api_error.h"

namespace qwen3::server {

// Ordered: tool definitions reach the template, and so the prompt, in the client's key order (as
// HF).
using json = nlohmann::ordered_json;

namespace {

// A field of the body, absent or null -> nullopt; present with another type -> 400.
std::optional<json> field(const json& body, const char* key, bool (json::*is_type)() const noexcept,
                          const char* type_name) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!((*it).*is_type)())
    throw ApiError(400, std::string("'") + key + "' must be " + type_name, key);
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
    throw ApiError(400,
                   std::string("'") + key + "' must be between " + nlohmann::json(lo).dump() +
                       " and " + nlohmann::json(hi).dump() + ", got " +
                       nlohmann::json(value).dump(),
                   key);
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
  if (!it->is_array() || it->size() > 16)
    throw ApiError(400, "'stop' must be a string or an array of at most 16 strings", "stop");
  std::vector<std::string> stop;
  for (auto& s : *it) {
    if (!s.is_string())
      throw ApiError(400, "'stop' must be a string or an array of strings", "stop");
    stop.push_back(s.get<std::string>());
  }
  return stop;
}

// OpenAI content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::string content_text(const json& content, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    throw ApiError(400, "'" + param + "' must be a string or an array of text parts", param);
  std::string text;
  for (auto& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      throw ApiError(
          400,
          "'" + param + "': only text parts ({\"type\": \"text\", \"text\": ...}) are supported",
          param);
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant message's earlier tool calls: each a function with a name and JSON object
// arguments (a string, as OpenAI sends them, or an object), as the template prints them back.
void check_tool_calls(const json& m, const std::string& param) {
  auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return;
  if (!calls->is_array())
    throw ApiError(400, "'" + param + ".tool_calls' must be an array", param + ".tool_calls");
  for (size_t j = 0; j < calls->size(); ++j) {
    const json& call = (*calls)[j];
    const std::string p = param + ".tool_calls[" + std::to_string(j) + "]";
    if (!call.is_object()) throw ApiError(400, "'" + p + "' must be an object", p);
    auto function = call.find("function");
    if (function == call.end() || !function->is_object())
      throw ApiError(400, "'" + p + ".function' must be an object with name and arguments",
                     p + ".function");
    auto name = function->find("name");
    if (name == function->end() || !name->is_string())
      throw ApiError(400, "'" + p + ".function.name' must be a string", p + ".function.name");
    auto args = function->find("arguments");
    const bool ok =
        args != function->end() &&
        (args->is_object() ||
         (args->is_string() && json::parse(args->get<std::string>(), nullptr, false).is_object()));
    if (!ok)
      throw ApiError(400,
                     "'" + p + ".function.arguments' must be a JSON object (as a string): " +
                         (args == function->end() ? std::string("missing") : args->dump()),
                     p + ".function.arguments");
  }
}

bool function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// "tools": [{"type": "function", "function": {"name", "description"?, "parameters"?}}].
std::vector<ToolSpec> parse_tools(const json& body) {
  auto tools = field(body, "tools", &json::is_array, "an array");
  if (!tools) return {};
  std::vector<ToolSpec> out;
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& t = (*tools)[i];
    const std::string p = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw ApiError(400, "'" + p + "' must be an object", p);
    if (t.value("type", json()) != "function")
      throw ApiError(400, "'" + p + ".type' must be \"function\"", p + ".type");
    auto f = t.find("function");
    if (f == t.end() || !f->is_object())
      throw ApiError(400, "'" + p + ".function' must be an object", p + ".function");
    auto name = f->find("name");
    if (name == f->end() || !name->is_string() || !function_name(name->get<std::string>()))
      throw ApiError(400, "'" + p + ".function.name' must be 1 to 64 letters, digits, '_' or '-'",
                     p + ".function.name");
    for (auto& known : out)
      if (known.name == name->get<std::string>())
        throw ApiError(400, "'" + p + ".function.name': '" + known.name + "' is declared twice",
                       p + ".function.name");
    json parameters = nullptr;
    if (auto params = f->find("parameters"); params != f->end() && !params->is_null()) {
      if (!params->is_object())
        throw ApiError(400, "'" + p + ".function.parameters' must be a JSON Schema object",
                       p + ".function.parameters");
      parameters = *params;
    }
    out.push_back({name->get<std::string>(), std::move(parameters)});
  }
  return out;
}

struct ToolChoice {
  enum class Kind { none, automatic, required, named } kind;
  std::string name;
};

ToolChoice parse_tool_choice(const json& body, const std::vector<ToolSpec>& tools) {
  ToolChoice choice{tools.empty() ? ToolChoice::Kind::none : ToolChoice::Kind::automatic, ""};
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return choice;
  const char* expected =
      "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
      "\"function\": {\"name\": ...}}";
  if (it->is_string()) {
    const std::string v = it->get<std::string>();
    if (v == "none") choice.kind = ToolChoice::Kind::none;
    else if (v == "auto")
      choice.kind = tools.empty() ? ToolChoice::Kind::none : ToolChoice::Kind::automatic;
    else if (v == "required") choice.kind = ToolChoice::Kind::required;
    else throw ApiError(400, expected, "tool_choice");
  } else if (it->is_object() && it->value("type", json()) == "function" &&
             it->contains("function") && (*it)["function"].is_object() &&
             (*it)["function"].contains("name") && (*it)["function"]["name"].is_string()) {
    choice.kind = ToolChoice::Kind::named;
    choice.name = (*it)["function"]["name"].get<std::string>();
  } else {
    throw ApiError(400, expected, "tool_choice");
  }
  if ((choice.kind == ToolChoice::Kind::required || choice.kind == ToolChoice::Kind::named) &&
      tools.empty())
    throw ApiError(400, "'tool_choice' requires 'tools'", "tool_choice");
  if (choice.kind == ToolChoice::Kind::named &&
      std::none_of(tools.begin(), tools.end(), [&](auto& t) { return t.name == choice.name; }))
    throw ApiError(400,
                   "'tool_choice' names function '" + choice.name + "', which is not in 'tools'",
                   "tool_choice");
  return choice;
}

// "response_format": the rule of the value it asks for, added to `g`, or "" for plain text.
std::string parse_response_format(const json& body, JsonSchemaGrammar& g) {
  auto format = field(body, "response_format", &json::is_object, "an object");
  if (!format) return "";
  auto type = format->find("type");
  if (type == format->end() || !type->is_string())
    throw ApiError(400,
                   "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                   "response_format.type");
  if (*type == "text") return "";
  if (*type == "json_object") return g.add(json{{"type", "object"}}, "format");
  if (*type != "json_schema")
    throw ApiError(400,
                   "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                   "response_format.type");
  auto spec = format->find("json_schema");
  if (spec == format->end() || !spec->is_object())
    throw ApiError(400, "'response_format.json_schema' must be an object {name, schema, strict}",
                   "response_format.json_schema");
  auto name = spec->find("name");
  if (name == spec->end() || !name->is_string() || !function_name(name->get<std::string>()))
    throw ApiError(400,
                   "'response_format.json_schema.name' must be 1 to 64 letters, digits, '_' or '-'",
                   "response_format.json_schema.name");
  if (auto strict = spec->find("strict");
      strict != spec->end() && !strict->is_null() && !strict->is_boolean())
    throw ApiError(400, "'response_format.json_schema.strict' must be a boolean",
                   "response_format.json_schema.strict");
  auto schema = spec->find("schema");
  if (schema == spec->end() || !schema->is_object())
    throw ApiError(400, "'response_format.json_schema.schema' must be a JSON Schema object",
                   "response_format.json_schema.schema");
  try {
    return g.add(*schema, "format");
  } catch (const Error& e) {
    throw ApiError(400, std::string("'response_format.json_schema.schema': ") + e.what(),
                   "response_format.json_schema.schema");
  }
}

// Checks roles and content types; returns messages the template can render (string contents).
// Qwen3.5's template walks each earlier call's arguments with |items, which refuses a string (HF
// fails the same way); OpenAI clients send them as a JSON string, so for the XML form they are
// parsed back into the object the template expects (checked to be one by check_tool_calls).
void parse_string_arguments(json& message) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array()) return;
  for (json& call : *calls) {
    json& arguments = call["function"]["arguments"];
    if (arguments.is_string()) arguments = json::parse(arguments.get<std::string>());
  }
}

json normalize_messages(const json& body, ToolSyntax syntax) {
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
    if (role == m.end() || !role->is_string())
      throw ApiError(400, "'" + param + ".role' must be a string", param + ".role");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw ApiError(400,
                     "'" + param + ".role': unknown role '" + r +
                         "' (system, developer, user, assistant, tool)",
                     param + ".role");
    json n = m;
    n["role"] = r;
    auto content = m.find("content");
    const bool has_calls =
        m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty();
    if (content == m.end() || content->is_null()) {
      if (r != "assistant" || !has_calls)
        throw ApiError(400, "'" + param + ".content' is required", param + ".content");
      n["content"] = "";
    } else {
      n["content"] = content_text(*content, i);
    }
    if (n.contains("reasoning_content") && !n["reasoning_content"].is_null() &&
        !n["reasoning_content"].is_string())
      throw ApiError(400, "'" + param + ".reasoning_content' must be a string",
                     param + ".reasoning_content");
    check_tool_calls(m, param);
    if (syntax == ToolSyntax::xml) parse_string_arguments(n);
    out.push_back(std::move(n));
  }
  return out;
}

// The prompt of /v1/completions: a string, token ids, or a one-element array of either.
std::vector<TokenId> completion_prompt(const json& body, const ServedModel& model) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw ApiError(400, "'prompt' is required", "prompt");
  json prompt = *it;
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array()))
    prompt = prompt[0];
  if (prompt.is_string()) return model.tokenizer->encode(prompt.get<std::string>(), true);
  if (!prompt.is_array() || prompt.empty())
    throw ApiError(400,
                   "'prompt' must be a string or an array of token ids (one prompt per request)",
                   "prompt");
  std::vector<TokenId> ids;
  for (auto& id : prompt) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.vocab_size)
      throw ApiError(
          400,
          "'prompt' token ids must be integers in [0, " + std::to_string(model.vocab_size) + ")",
          "prompt");
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

// "thinking_budget" (tokens) and "thinking_loop_guard" ("close", "penalize" or "off"): this
// server's extensions. Every chat reply gets a controller: it also counts the reasoning tokens.
ReasoningOptions parse_reasoning(const json& body) {
  ReasoningOptions o;
  if (auto budget = number<int>(body, "thinking_budget")) {
    if (*budget < 0)
      throw ApiError(400, "'thinking_budget' must be >= 0 (tokens), got " + std::to_string(*budget),
                     "thinking_budget");
    o.thinking_budget = *budget;
  }
  if (auto guard = field(body, "thinking_loop_guard", &json::is_string, "a string")) {
    if (*guard == "close") o.loop_action = LoopAction::close;
    else if (*guard == "penalize") o.loop_action = LoopAction::penalize;
    else if (*guard == "off") o.loop_action = LoopAction::off;
    else
      throw ApiError(400, "'thinking_loop_guard' must be \"close\", \"penalize\" or \"off\"",
                     "thinking_loop_guard");
  }
  return o;
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

// The grammar of a chat reply: the response_format's value, forced tool calls, or either (tools
// on "auto" beside a response_format); with reasoning first when the model thinks.
void constrain(ApiRequest& r, const ServedModel& model, JsonSchemaGrammar& g,
               const std::string& format, const ToolChoice& choice, bool parallel) {
  using Kind = ToolChoice::Kind;
  const char* param = format.empty() ? "tool_choice" : "response_format";
  std::string root;
  try {
    if (choice.kind == Kind::required) {
      root = "lead-ws " + tool_call_rule(model.tool_syntax, r.tools, parallel, g);
    } else if (choice.kind == Kind::named) {
      std::vector<ToolSpec> one;
      for (auto& t : r.tools)
        if (t.name == choice.name) one.push_back(t);
      root = "lead-ws " + tool_call_rule(model.tool_syntax, one, false, g);
    } else if (choice.kind == Kind::automatic && (!format.empty() || !parallel)) {
      // Either the asked-for value or calls; without a format, text then at most one call.
      const std::string calls = tool_call_rule(model.tool_syntax, r.tools, parallel, g);
      root = format.empty() ? g.add_rule("free-text", ".*") + " " + calls + "?"
                            : "lead-ws ( " + format + " | " + calls + " )";
    } else if (!format.empty()) {
      root = "lead-ws " + format;
    }
  } catch (const Error& e) {  // a parameters schema: "tools[i].function.parameters: ..."
    const std::string message = e.what();
    const size_t colon = message.find(": ");
    throw ApiError(400, message,
                   message.starts_with("tools[") && colon != std::string::npos
                       ? message.substr(0, colon)
                       : "tools");
  }
  if (root.empty()) return;
  g.common("lead-ws");
  if (r.options.eos.empty())
    throw ApiError(400,
                   "'ignore_eos' cannot be combined with a constrained reply (response_format, "
                   "tool_choice): the "
                   "grammar ends it with the end-of-turn token",
                   "ignore_eos");
  if (!model.grammars)
    throw ApiError(400, "constrained output is not available on this server", param);
  GrammarConstraint constraint;
  try {
    constraint.grammar = model.grammars->get(g.text(root));
  } catch (const Error& e) {
    throw ApiError(400, e.what(), param);
  }
  const auto& vocabulary = model.grammars->vocabulary();
  constraint.think_start = vocabulary.added_token("<think>");
  constraint.think_end = vocabulary.added_token("</think>");
  // A complete reply ends its turn: <|im_end|> alone when it is an eos token (not <|endoftext|>).
  const TokenId im_end = vocabulary.added_token("<|im_end|>");
  if (std::find(r.options.eos.begin(), r.options.eos.end(), im_end) != r.options.eos.end())
    constraint.end_tokens = {im_end};
  using R = GrammarConstraint::Reasoning;
  constraint.reasoning = !r.thinking ? R::none : r.thinking_opened ? R::open : R::optional;
  r.options.grammar = std::move(constraint);
}

ApiRequest parse_body(Endpoint endpoint, const json& body, const ServedModel& model) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  field(body, "model", &json::is_string, "a string");
  if (auto n = number<int>(body, "n"); n && *n != 1)
    throw ApiError(400, "only 'n': 1 is supported", "n");
  if (auto n = number<int>(body, "best_of"); n && *n != 1)
    throw ApiError(400, "only 'best_of': 1 is supported", "best_of");
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
    const std::vector<ToolSpec> tools = parse_tools(body);
    const ToolChoice choice = parse_tool_choice(body, tools);
    const bool parallel = boolean(body, "parallel_tool_calls").value_or(true);
    JsonSchemaGrammar g;
    const std::string format = parse_response_format(body, g);
    // tool_choice "none": the model is not shown the tools, and nothing is parsed as a call.
    if (choice.kind != ToolChoice::Kind::none) {
      chat.tools = body["tools"];
      r.tools = tools;
      r.tool_syntax = model.tool_syntax;
    }
    r.prompt = encode_chat(*model.chat, *model.tokenizer,
                           normalize_messages(body, model.tool_syntax), chat);
    r.thinking = chat.enable_thinking;
    r.options.reasoning = parse_reasoning(body);
    r.thinking_opened = model.tokenizer->decode(r.prompt).ends_with("<think>\n");
    constrain(r, model, g, format, choice, parallel);
  } else {
    for (const char* key :
         {"response_format", "tools", "tool_choice", "thinking_budget", "thinking_loop_guard"})
      if (body.contains(key) && !body[key].is_null())
        throw ApiError(400, std::string("'") + key + "' is only supported by /v1/chat/completions",
                       key);
    r.prompt = completion_prompt(body, model);
  }
  const char* prompt_param = endpoint == Endpoint::chat ? "messages" : "prompt";
  if (r.prompt.empty()) throw ApiError(400, "the prompt is empty", prompt_param);
  if (r.prompt.size() + 1 > size_t(model.context))
    throw ApiError(400,
                   "the prompt has " + std::to_string(r.prompt.size()) +
                       " tokens; this server's context is " + std::to_string(model.context) +
                       " tokens (prompt plus at least one new token)",
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
