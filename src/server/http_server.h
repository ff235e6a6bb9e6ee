// The OpenAI-compatible HTTP(S) server over an Engine, with vLLM's operational surface:
//   POST /v1/chat/completions, POST /v1/completions (SSE streaming or not), GET /v1/models,
//   POST /tokenize, POST /detokenize, GET /version, GET /health, GET|POST /ping,
//   GET /metrics (Prometheus, vLLM names), GET / (the chat page, web_ui.h).
// --api-key protects /v1/*. Every error is an OpenAI-style JSON error body. Each request
// gets an X-Request-Id (the client's or a new one), echoed on the response, named in its log
// lines and in its one access-log line. CORS as vLLM (cors.h).
// Life cycle: a server made without an engine answers /health (and generation) with 503
// while the model loads; attach() makes it ready. drain() answers 503 to new generation
// requests and /health, waits for the running ones up to a deadline, then stops.
#pragma once
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/serve_options.h"

namespace qinfer::server {

class HttpServer {
 public:
  HttpServer(engine::Engine& engine, const ServeOptions& opts);  // ready at once
  explicit HttpServer(const ServeOptions& opts);                 // loading until attach()
  ~HttpServer();
  // The engine to serve; from now on /health is 200.
  void attach(engine::Engine& engine);
  // Binds opts.host:opts.port (port 0: any free port); returns the port. Error if it cannot.
  int bind();
  // Serves until stop(); call after bind().
  void serve();
  void stop();
  // Graceful stop: new generation requests get 503, /health 503; returns once the running
  // requests are done or deadline_s has passed (they are then ended), after stop().
  void drain(double deadline_s);
  int requests_in_flight() const;
  bool draining() const;  // drain() has begun
  const std::string& model_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::server
