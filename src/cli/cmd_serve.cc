// qinfer serve MODEL_DIR [vllm serve flags]: the OpenAI-compatible server.
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "engine/engine.h"
#include "server/http_server.h"
#include "server/serve_options.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::cli {

namespace {
server::HttpServer* g_server = nullptr;
void on_signal(int) {
  if (g_server) g_server->stop();
}
}  // namespace

int cmd_serve(int argc, char** argv) {
  server::ServeOptions o = server::parse_serve_options(argc, argv);
  if (o.help) {
    std::fputs(server::serve_usage().c_str(), stdout);
    return 0;
  }
  if (!o.ignored.empty()) {
    std::string list;
    for (const auto& f : o.ignored) list += (list.empty() ? "" : ", ") + f;
    log_info("accepted without effect on this CPU engine: ", list);
  }
  engine::EngineOptions eo;
  eo.max_num_seqs = o.max_num_seqs;
  eo.max_model_len = o.max_model_len;
  eo.allow_long_max_model_len = o.allow_long_max_model_len;
  eo.prefill_chunk = o.prefill_chunk;
  eo.load.threads = o.threads;
  eo.load.dense_int8 = o.dense_int8;
  eo.load.load_vision = o.max_images_per_prompt > 0;   // vLLM's '{"image": 0}': text only
  auto engine = engine::Engine::load(o.model_dir, eo);
  server::HttpServer srv(*engine, o);
  int port = srv.bind();
  std::signal(SIGPIPE, SIG_IGN);
  g_server = &srv;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  log_info("serving model '", srv.model_name(), "' (max_model_len ", engine->max_model_len(), ", max_num_seqs ",
           o.max_num_seqs, ")", engine->tokenizer() ? "" : ", token ids only (no tokenizer)");
  // The listening address on stdout too, for scripts.
  std::printf("qinfer serve: listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stdout);
  srv.serve();
  g_server = nullptr;
  log_info("server stopped");
  return 0;
}

}  // namespace qinfer::cli
