// qinfer serve MODEL_DIR [vllm serve flags]: the OpenAI-compatible server.
// The port is bound and served before the model loads (/health answers 503 until it is
// ready); SIGTERM or SIGINT drains (new requests 503, running ones finish up to
// --drain-timeout) and exits 0; a second signal stops at once.
#include <atomic>
#include <chrono>
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
std::atomic<int> g_signals{0};
void on_signal(int) { g_signals.fetch_add(1); }
}  // namespace

int cmd_serve(int argc, char** argv) {
  server::ServeOptions o = server::parse_serve_options(argc, argv);
  if (o.help) {
    std::fputs(server::serve_usage().c_str(), stdout);
    return 0;
  }
  const model::ExpertsPlacement experts = model::parse_experts_placement(o.experts);   // before the load
  if (!o.ignored.empty()) {
    std::string list;
    for (const auto& f : o.ignored) list += (list.empty() ? "" : ", ") + f;
    log_info("accepted without effect on this CPU engine: ", list);
  }
  server::HttpServer srv(o);  // checks --chat-template and the TLS files before the long load
  int port = srv.bind();
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::thread http([&] { srv.serve(); });
  const char* scheme = o.ssl_certfile.empty() ? "http" : "https";
  // The listening address on stdout too, for scripts; /health is 503 until the model is loaded.
  std::printf("qinfer serve: listening on %s://%s:%d\n", scheme, o.host.c_str(), port);
  std::fflush(stdout);
  log_info("listening on ", scheme, "://", o.host, ":", port, " (loading the model; /health is 503 until ready)");
  if (o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1") {
    log_info("listening on ", o.host, " only (loopback): other machines cannot connect; pass --host 0.0.0.0 to serve them");
  } else {
    log_info("listening on ", o.host, " (reachable from other machines)",
             o.api_key.empty() ? "; no API key is set (--api-key or QINFER_API_KEY / VLLM_API_KEY)" : "");
  }
  if (!o.api_key.empty()) log_info("API key required on /v1/* (from ", o.api_key_source, ")");

  engine::EngineOptions eo;
  eo.max_num_seqs = o.max_num_seqs;
  eo.max_model_len = o.max_model_len;
  eo.allow_long_max_model_len = o.allow_long_max_model_len;
  eo.prefill_chunk = o.prefill_chunk;
  eo.load.threads = o.threads;
  eo.load.dense_int8 = o.dense_int8;
  eo.load.dense_bf16c = o.dense_bf16c;
  eo.load.memory_budget = o.memory_budget;
  eo.load.experts = experts;
  eo.spec = o.spec;
  eo.load.load_vision = o.max_images_per_prompt > 0;   // vLLM's '{"image": 0}': text only
  eo.enable_prefix_caching = o.enable_prefix_caching;
  eo.prefix_cache_gb = o.prefix_cache_gb;
  eo.max_queued_seqs = o.max_queued_seqs;
  eo.max_queued_tokens = o.max_queued_tokens;
  eo.max_queued_bytes = o.max_queued_bytes;
  std::unique_ptr<engine::Engine> engine;
  try {
    engine = engine::Engine::load(o.model_dir, eo);
  } catch (...) {
    srv.stop();
    http.join();
    throw;
  }
  if (g_signals.load() == 0) {
    srv.attach(*engine);
    log_info("serving model '", srv.model_name(), "' (max_model_len ", engine->max_model_len(), ", max_num_seqs ",
             o.max_num_seqs, ")", engine->tokenizer() ? "" : ", token ids only (no tokenizer)");
    const engine::EngineOptions& q = engine->options();
    log_info("queue limits: --max-waiting-requests ", o.max_waiting, ", --max-queued-seqs ", q.max_queued_seqs,
             ", --max-queued-tokens ", q.max_queued_tokens, ", --max-queued-bytes-gb: ", q.max_queued_bytes >> 20,
             " MiB of waiting work (work-memory budget with the running sequences' share: ",
             engine->work_budget() >> 20, " MiB)");
  }
  // Wait for a signal, then drain; a second signal during the drain stops at once.
  while (g_signals.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  log_info("signal received: draining (up to --drain-timeout ", o.drain_timeout, " s)");
  std::thread drainer([&] { srv.drain(o.drain_timeout); });
  while (srv.requests_in_flight() > 0 && g_signals.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (g_signals.load() >= 2) {
    log_warn("second signal: stopping now");
    srv.stop();
  }
  drainer.join();
  http.join();
  log_info("server stopped");
  return 0;
}

}  // namespace qinfer::cli
