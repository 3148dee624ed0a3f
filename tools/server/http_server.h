// The HTTP routes of `qwen3 serve`: OpenAI endpoints, health, metrics, auth and error shapes.
#pragma once

#include <cstddef>
#include <string>

#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/scheduler.h"

namespace qwen3::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0 = any free port (printed at start-up)
  std::string api_key;        // non-empty: /v1/* requires "Authorization: Bearer KEY"
  size_t max_body = 4 << 20;  // bytes; larger bodies get 413
  int timeout_s = 600;  // a request still generating after this is ended (finish_reason "length")
  int threads = 64;     // connections served at once (a streaming client holds one)
};

// Serves until the process ends; prints "listening on http://HOST:PORT" once bound.
// Throws qwen3::Error (io) when the address cannot be bound.
void serve_http(const HttpOptions& options, const ServedModel& model, Scheduler& scheduler,
                Metrics& metrics);

}  // namespace qwen3::server
