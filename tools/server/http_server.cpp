// The HTTP routes of `qwen3 serve`. Every failure becomes an OpenAI-shaped error; nothing escapes.
#include "server/http_server.h"

#include <cstdio>

#include <httplib.h>

#include "qwen3/error.h"
#include "server/openai_response.h"

namespace qwen3::server {

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  // A full queue drains as requests finish: clients (the openai ones among them) retry after it.
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(dump(error_body(e)), "application/json");
}

// Everything one request needs while its reply is produced, shared with the streaming callback.
struct Exchange {
  ApiRequest request;
  std::shared_ptr<Job> job;
  Reply reply;
  Job::Clock::time_point deadline;
  bool started = false;

  Exchange(ApiRequest r, std::shared_ptr<Job> j, const ServedModel& model, int timeout_s)
      : request(std::move(r)),
        job(std::move(j)),
        reply(request, *model.tokenizer, model.name),
        deadline(Job::Clock::now() + std::chrono::seconds(timeout_s)) {}

  // Waits a little for news; feeds it to the reply and returns the chunks to send.
  // `update.finished` (with error) tells the caller the request is over.
  std::vector<json> poll(Job::Update& update) {
    if (Job::Clock::now() > deadline) job->cancel();  // the scheduler ends it at its next step
    update = job->wait(100ms);
    std::vector<json> out;
    if (!started) {
      out = reply.start();
      started = true;
    }
    for (auto& token : update.tokens)
      for (auto& c : reply.on_token(token)) out.push_back(std::move(c));
    if (update.finished && update.error.empty())
      for (auto& c : reply.on_finish(update.reason,
                                     {update.prompt_tokens, update.completion_tokens,
                                      update.cached_tokens, update.reasoning_tokens},
                                     std::move(update.reasoning_events)))
        out.push_back(std::move(c));
    return out;
  }
};

void stream(httplib::Response& res, std::shared_ptr<Exchange> ex) {
  auto idle_since = std::make_shared<Job::Clock::time_point>(Job::Clock::now());
  res.set_chunked_content_provider(
      "text/event-stream",
      [ex, idle_since](size_t, httplib::DataSink& sink) {
        Job::Update update;
        std::string data;
        for (auto& c : ex->poll(update)) data += sse_event(c);
        if (update.finished && !update.error.empty())
          data += sse_event(error_body(ApiError(500, update.error)));
        if (update.finished) data += "data: [DONE]\n\n";
        // An SSE comment now and then while nothing comes (queued, long prompt) notices a client
        // that has gone away, so its request is cancelled.
        if (data.empty() && Job::Clock::now() - *idle_since > 1s) data = ": keep-alive\n\n";
        if (!data.empty()) {
          *idle_since = Job::Clock::now();
          if (!sink.write(data.data(), data.size()))
            return false;  // client gone: the releaser cancels
        }
        if (update.finished) sink.done();
        return true;
      },
      [ex](bool) {
        ex->job->cancel();
      });  // no-op once finished; frees the slot of a vanished client
}

void handle_generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                       const ServedModel& model, Scheduler& scheduler, const HttpOptions& options) {
  auto request = parse_request(endpoint, req.body, model);
  auto job = scheduler.submit(request.prompt, request.options);
  auto ex =
      std::make_shared<Exchange>(std::move(request), std::move(job), model, options.timeout_s);
  if (ex->request.stream) return stream(res, ex);
  Job::Update update;
  while (!update.finished) ex->poll(update);
  if (!update.error.empty()) throw ApiError(500, update.error);
  res.set_content(dump(ex->reply.body()), "application/json");
}

}  // namespace

void serve_http(const HttpOptions& options, const ServedModel& model, Scheduler& scheduler,
                Metrics& metrics) {
  httplib::Server server;
  const int threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(options.max_body);

  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (options.api_key.empty() || !req.path.starts_with("/v1/"))
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + options.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "invalid or missing API key (Authorization: Bearer KEY)", "",
                             "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (404, 413, ...) get the same error shape as ours.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 404   ? "no route for " + req.method + " " + req.path
                                : res.status == 413 ? std::string("the request body is too large")
                                                    : "HTTP error " + std::to_string(res.status);
    send_error(res, ApiError(res.status, message));
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          message = x.what();
        } catch (...) {}
        send_error(res, ApiError(500, message));
      });
  server.set_logger(
      [&](const httplib::Request&, const httplib::Response& res) { metrics.request(res.status); });

  for (auto [path, endpoint] : {std::pair{"/v1/chat/completions", Endpoint::chat},
                                {"/v1/completions", Endpoint::completion}})
    server.Post(path, [&, endpoint](const httplib::Request& req, httplib::Response& res) {
      try {
        handle_generation(endpoint, req, res, model, scheduler, options);
      } catch (const ApiError& e) {
        send_error(res, e);
      }
    });
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    json data = json::array(
        {{{"id", model.name}, {"object", "model"}, {"created", 0}, {"owned_by", "qwen3"}}});
    res.set_content(dump({{"object", "list"}, {"data", data}}), "application/json");
  });
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4");
  });

  int port = options.port;
  if (port == 0) port = server.bind_to_any_port(options.host);
  else if (!server.bind_to_port(options.host, port)) port = -1;
  if (port <= 0)
    throw Error(ErrorKind::io,
                "cannot listen on " + options.host + ":" + std::to_string(options.port));
  std::printf("listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  server.listen_after_bind();
}

}  // namespace qwen3::server
