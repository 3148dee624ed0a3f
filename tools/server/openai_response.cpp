// OpenAI response bodies and SSE chunks: chat.completion(.chunk) and text_completion shapes.
#include "server/openai_response.h"

#include <chrono>
#include <cmath>
#include <random>

namespace qwen3::server {

using nlohmann::json;

namespace {

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + hex;
}

json byte_array(std::string_view bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(int(c));
  return out;
}

}  // namespace

Reply::Reply(const ApiRequest& request, const Tokenizer& tokenizer, std::string model_name)
    : request_(request),
      tokenizer_(tokenizer),
      model_(std::move(model_name)),
      id_(random_id(request.endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      splitter_(request.endpoint == Endpoint::chat && request.thinking, request.thinking_opened) {
  if (request.endpoint == Endpoint::chat)
    logprobs_ = {{"content", json::array()}};
  else
    logprobs_ = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
                 {"text_offset", json::array()}};
}

json Reply::chunk(json choice) const {
  json c = {{"id", id_},
            {"object", request_.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created_},
            {"model", model_},
            {"choices", json::array({std::move(choice)})}};
  if (request_.include_usage) c["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return c;
}

std::vector<json> Reply::start() {
  if (request_.endpoint != Endpoint::chat) return {};
  return {chunk({{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}})};
}

json Reply::text_choice(const ThinkSplitter::Piece& piece, json logprobs) const {
  json choice = {{"index", 0}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}};
  if (request_.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
    if (!piece.content.empty()) delta["content"] = piece.content;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = piece.content;
  }
  return choice;
}

json Reply::logprob_entry(const GeneratedToken& token) {
  auto name = [&](TokenId id) {
    return request_.tokens_as_ids ? "token_id:" + std::to_string(id) : tokenizer_.decode(std::span(&id, 1));
  };
  if (request_.endpoint == Endpoint::chat) {
    json top = json::array();
    for (auto& t : token.top)
      top.push_back({{"token", name(t.id)}, {"logprob", std::log(t.prob)}, {"bytes", byte_array(tokenizer_.token_bytes(t.id))}});
    json entry = {{"token", name(token.id)},
                  {"logprob", token.logprob},
                  {"bytes", byte_array(tokenizer_.token_bytes(token.id))},
                  {"top_logprobs", std::move(top)}};
    logprobs_["content"].push_back(entry);
    return {{"content", json::array({entry})}};
  }
  json top = json::object();
  for (auto& t : token.top) top[name(t.id)] = std::log(t.prob);
  json entry = {{"tokens", {name(token.id)}},
                {"token_logprobs", {token.logprob}},
                {"top_logprobs", {top}},
                {"text_offset", {text_offset_}}};
  for (auto& [key, values] : entry.items()) logprobs_[key].push_back(values[0]);
  text_offset_ += tokenizer_.token_bytes(token.id).size();
  return entry;
}

std::vector<json> Reply::on_token(const GeneratedToken& token) {
  json logprobs = request_.options.logprobs ? logprob_entry(token) : json(nullptr);
  auto piece = splitter_.push(token.text);
  content_ += piece.content;
  reasoning_ += piece.reasoning;
  if (piece.content.empty() && piece.reasoning.empty() && logprobs.is_null()) return {};
  return {chunk(text_choice(piece, std::move(logprobs)))};
}

std::vector<json> Reply::on_finish(FinishReason reason, Usage usage) {
  finish_ = reason;
  usage_ = usage;
  auto piece = splitter_.finish();
  content_ += piece.content;
  reasoning_ += piece.reasoning;
  json last = text_choice(piece, nullptr);
  last["finish_reason"] = finish_reason_name(reason);
  std::vector<json> out{chunk(std::move(last))};
  if (request_.include_usage) {
    json u = chunk(nullptr);
    u["choices"] = json::array();
    u["usage"] = usage_json();
    out.push_back(std::move(u));
  }
  return out;
}

json Reply::usage_json() const {
  return {{"prompt_tokens", usage_.prompt_tokens},
          {"completion_tokens", usage_.completion_tokens},
          {"total_tokens", usage_.prompt_tokens + usage_.completion_tokens}};
}

json Reply::body() const {
  json choice = {{"index", 0}, {"logprobs", request_.options.logprobs ? logprobs_ : json(nullptr)}, {"finish_reason", finish_reason_name(finish_)}};
  if (request_.endpoint == Endpoint::chat) {
    json message = {{"role", "assistant"}, {"content", content_}};
    if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
    choice["message"] = std::move(message);
  } else {
    choice["text"] = content_;
  }
  return {{"id", id_},
          {"object", request_.endpoint == Endpoint::chat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({std::move(choice)})},
          {"usage", usage_json()}};
}

json error_body(const ApiError& error) {
  return {{"error",
           {{"message", error.what()},
            {"type", error_type(error.status)},
            {"param", error.param.empty() ? json(nullptr) : json(error.param)},
            {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& data) { return "data: " + dump(data) + "\n\n"; }

}  // namespace qwen3::server
