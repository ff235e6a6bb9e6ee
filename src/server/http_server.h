// The OpenAI-compatible HTTP server over an Engine:
//   POST /v1/chat/completions, POST /v1/completions (streaming SSE or not),
//   GET /v1/models, GET /health, GET /metrics (Prometheus text).
// --api-key protects /v1/*. Every error is an OpenAI-style JSON error body.
#pragma once
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/serve_options.h"

namespace qinfer::server {

class HttpServer {
 public:
  HttpServer(engine::Engine& engine, const ServeOptions& opts);
  ~HttpServer();
  // Binds opts.host:opts.port (port 0: any free port); returns the port. Error if it cannot.
  int bind();
  // Serves until stop(); call after bind().
  void serve();
  void stop();
  const std::string& model_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qinfer::server
