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
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      splitter_(request.endpoint == Endpoint::chat && request.thinking, request.thinking_opened) {
  if (request.endpoint == Endpoint::chat && !request.tools.empty())
    tool_parser_.emplace(request.tool_syntax, request.tools);
  if (request.endpoint == Endpoint::chat) logprobs_ = {{"content", json::array()}};
  else
    logprobs_ = {{"tokens", json::array()},
                 {"token_logprobs", json::array()},
                 {"top_logprobs", json::array()},
                 {"text_offset", json::array()}};
}

json Reply::chunk(json choice) const {
  json c = {
      {"id", id_},
      {"object", request_.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
      {"created", created_},
      {"model", model_},
      {"choices", json::array({std::move(choice)})}};
  if (request_.include_usage) c["usage"] = nullptr;  // OpenAI: null on every chunk but the last
  return c;
}

std::vector<json> Reply::start() {
  if (request_.endpoint != Endpoint::chat) return {};
  return {chunk({{"index", 0},
                 {"delta", {{"role", "assistant"}, {"content", ""}}},
                 {"logprobs", nullptr},
                 {"finish_reason", nullptr}})};
}

Reply::Delta Reply::take(const ThinkSplitter::Piece& piece, bool final) {
  Delta d;
  d.reasoning = piece.reasoning;
  reasoning_ += piece.reasoning;
  if (!tool_parser_) {
    d.content = piece.content;
    content_ += piece.content;
    return d;
  }
  apply(tool_parser_->push(piece.content), d);
  if (final) apply(tool_parser_->finish(), d);
  return d;
}

// Parser events -> the reply's content and calls, and OpenAI's stream deltas: a call's index,
// id, type and name first, then its arguments in pieces.
void Reply::apply(const std::vector<ToolEvent>& events, Delta& d) {
  for (auto& e : events) {
    switch (e.kind) {
      case ToolEvent::Kind::content:
        d.content += e.text;
        content_ += e.text;
        break;
      case ToolEvent::Kind::call:
        calls_.push_back({random_id("call_"), e.text, ""});
        d.tool_calls.push_back({{"index", e.index},
                                {"id", calls_.back().id},
                                {"type", "function"},
                                {"function", {{"name", e.text}, {"arguments", ""}}}});
        break;
      case ToolEvent::Kind::arguments:
        calls_[e.index].arguments += e.text;
        if (!d.tool_calls.empty() && d.tool_calls.back()["index"] == e.index) {
          auto& args = d.tool_calls.back()["function"]["arguments"];
          args = args.get<std::string>() + e.text;
        } else {
          d.tool_calls.push_back({{"index", e.index}, {"function", {{"arguments", e.text}}}});
        }
        break;
    }
  }
}

const char* Reply::finish_reason() const {
  // OpenAI: a reply that ends in calls (not cut off by max_tokens) says "tool_calls".
  if (!calls_.empty() && finish_ != FinishReason::length) return "tool_calls";
  return finish_reason_name(finish_);
}

json Reply::delta_choice(const Delta& d, json logprobs) const {
  json choice = {{"index", 0}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}};
  if (request_.endpoint == Endpoint::chat) {
    json delta = json::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) delta["content"] = d.content;
    if (!d.tool_calls.empty()) delta["tool_calls"] = d.tool_calls;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = d.content;
  }
  return choice;
}

json Reply::logprob_entry(const GeneratedToken& token) {
  auto name = [&](TokenId id) {
    return request_.tokens_as_ids ? "token_id:" + std::to_string(id)
                                  : tokenizer_.decode(std::span(&id, 1));
  };
  if (request_.endpoint == Endpoint::chat) {
    json top = json::array();
    for (auto& t : token.top)
      top.push_back({{"token", name(t.id)},
                     {"logprob", std::log(t.prob)},
                     {"bytes", byte_array(tokenizer_.token_bytes(t.id))}});
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
  const Delta d = take(splitter_.push(token.text), false);
  if (d.empty() && logprobs.is_null()) return {};
  return {chunk(delta_choice(d, std::move(logprobs)))};
}

std::vector<json> Reply::on_finish(FinishReason reason, Usage usage,
                                   std::vector<ReasoningEvent> reasoning_events) {
  finish_ = reason;
  usage_ = usage;
  reasoning_events_ = std::move(reasoning_events);
  json last = delta_choice(take(splitter_.finish(), true), nullptr);
  last["finish_reason"] = finish_reason();
  add_reasoning_control(last);
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
  json usage = {{"prompt_tokens", usage_.prompt_tokens},
                {"completion_tokens", usage_.completion_tokens},
                {"total_tokens", usage_.prompt_tokens + usage_.completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", usage_.cached_tokens}}}};
  // Completions have no reasoning: their prompt is raw text, with no think block to track.
  if (request_.endpoint == Endpoint::chat)
    usage["completion_tokens_details"] = {{"reasoning_tokens", usage_.reasoning_tokens}};
  return usage;
}

// This server's extension beside finish_reason (which stays OpenAI's): what the thinking budget
// and the loop guard did, in order, e.g. [{"cause": "loop", "action": "closed_thinking",
// "reasoning_tokens": 412}]; absent when they did nothing.
void Reply::add_reasoning_control(json& choice) const {
  if (reasoning_events_.empty()) return;
  json events = json::array();
  for (const auto& e : reasoning_events_)
    events.push_back({{"cause", reasoning_cause_name(e.cause)},
                      {"action", reasoning_action_name(e.action)},
                      {"reasoning_tokens", e.reasoning_tokens}});
  choice["reasoning_control"] = std::move(events);
}

json Reply::body() const {
  json choice = {{"index", 0},
                 {"logprobs", request_.options.logprobs ? logprobs_ : json(nullptr)},
                 {"finish_reason", finish_reason()}};
  if (request_.endpoint == Endpoint::chat) {
    // OpenAI: content null when the reply is only calls.
    json message = {
        {"role", "assistant"},
        {"content", calls_.empty() || !content_.empty() ? json(content_) : json(nullptr)}};
    if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
    if (!calls_.empty()) {
      json calls = json::array();
      for (auto& c : calls_)
        calls.push_back({{"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      message["tool_calls"] = std::move(calls);
    }
    choice["message"] = std::move(message);
    add_reasoning_control(choice);
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
