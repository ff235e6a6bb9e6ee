#include "server/http_server.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "chat/chat_format.h"
#include "chat/reasoning_parser.h"
#include "io/generation_config.h"
#include "jinja/chat_template.h"
#include "server/api_error.h"
#include "server/connection_guard.h"
#include "server/connection_pool.h"
#include "server/chat_prompt.h"
#include "server/cors.h"
#include "server/generation_job.h"
#include "server/image_input.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_log.h"
#include "server/structured_output.h"
#include "server/tokenize_endpoint.h"
#include "server/unimplemented_fields.h"
#include "server/version.h"
#include "server/web_ui.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "util/log.h"
#include "vision/vision_config.h"

namespace qinfer::server {

using json = nlohmann::json;

namespace {

constexpr double kPollSeconds = 0.05;
constexpr double kHeartbeatSeconds = 0.5;
enum Phase { kLoading = 0, kReady = 1, kDraining = 2 };

// Request bodies above this get httplib's 413 (with an OpenAI-shaped body, below).
constexpr size_t kMaxBodyBytes = size_t{64} << 20;

std::string http_refusal_message(int status) {
  switch (status) {
    case 413: return cat("request body too large (the limit is ", kMaxBodyBytes >> 20, " MiB)");
    case 414: return "request URI too long";
    case 400: return "malformed HTTP request (request line or headers could not be parsed)";
    case 416: return "requested range not satisfiable";
    default: return cat("request refused (HTTP ", status, ")");
  }
}

// Constant time in the key's content: a timing side channel must not reveal how many
// leading characters of a guess were right.
bool api_key_matches(const std::string& header, const std::string& key) {
  const std::string want = "Bearer " + key;
  unsigned char diff = header.size() == want.size() ? 0 : 1;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i] ^ (i < header.size() ? header[i] : 0));
  }
  return diff == 0;
}

// --chat-template: a file, or (as vLLM allows) the template text itself.
std::unique_ptr<ChatTemplate> load_chat_template_option(const std::string& v) {
  if (v.empty()) return nullptr;
  std::error_code ec;
  if (std::filesystem::is_regular_file(v, ec)) {
    std::ifstream f(v);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) fail("option --chat-template: cannot read '", v, "'");
    try {
      return std::make_unique<ChatTemplate>(ChatTemplate::from_string(ss.str(), v));
    } catch (const Error& e) {
      fail("option --chat-template: ", v, ": ", e.what());
    }
  }
  if (v.find("{{") == std::string::npos && v.find("{%") == std::string::npos) {
    fail("option --chat-template: '", v, "' is neither a readable file nor a Jinja template");
  }
  try {
    return std::make_unique<ChatTemplate>(ChatTemplate::from_string(v, "--chat-template"));
  } catch (const Error& e) {
    fail("option --chat-template: ", e.what());
  }
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status(), e.to_json());
  if (e.code() == "queue_full" || e.status() == 503) res.set_header("Retry-After", "1");
}

// The handler label of http_requests_total: the route, or "none" as the instrumentator has it.
std::string handler_label(const std::string& path) {
  static const char* const kRoutes[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize",
                                        "/detokenize", "/version", "/health", "/ping", "/metrics", "/"};
  for (const char* r : kRoutes) {
    if (path == r) return r;
  }
  return "none";
}

// Counts a generation request as in flight from its handler until its response is written.
struct InflightGuard {
  std::atomic<int>& n;
  explicit InflightGuard(std::atomic<int>& c) : n(c) { ++n; }
  ~InflightGuard() { --n; }
};

}  // namespace

struct HttpServer::Impl {
  ServeOptions opts;
  std::atomic<engine::Engine*> eng_ptr{nullptr};
  RequestLimits limits;
  std::string model;
  std::unique_ptr<httplib::Server> svr;
  Metrics metrics;
  int think_end_id = -1;
  std::unique_ptr<ChatTemplate> tmpl_override;
  CorsPolicy cors;
  RequestRegistry registry;
  std::atomic<int> phase{kLoading};
  std::atomic<bool> stopping{false};  // set by stop(): running responses end at once
  // serve() entered / returned: stop() right after start (a load that fails at once) must not
  // miss a listen loop that had not begun yet, which would then run forever.
  std::atomic<bool> serve_entered{false}, serve_returned{false};
  std::atomic<int> inflight{0};       // generation requests whose response is not finished
  vision::ProcessorConfig processor;  // the folder's preprocessor_config.json (image requests)

  explicit Impl(const ServeOptions& o) : opts(o) {
    limits.model_names = o.served_model_names;
    if (limits.model_names.empty()) limits.model_names.push_back(o.model_dir);
    model = limits.model_names.front();
    limits.max_images_per_prompt = o.max_images_per_prompt;
    cors.origins = o.allowed_origins;
    cors.methods = o.allowed_methods;
    cors.headers = o.allowed_headers;
    cors.credentials = o.allow_credentials;
    tmpl_override = load_chat_template_option(o.chat_template);
    if (!o.ssl_certfile.empty()) {
      for (const auto& [flag, f] : {std::pair{"--ssl-certfile", o.ssl_certfile}, std::pair{"--ssl-keyfile", o.ssl_keyfile}}) {
        std::ifstream in(f);
        if (!in) fail("option ", flag, ": cannot read '", f, "'");
      }
      auto s = std::make_unique<GuardedSslServer>(connection_limits(), o.ssl_certfile.c_str(), o.ssl_keyfile.c_str());
      if (!s->is_valid()) {
        fail("options --ssl-certfile '", o.ssl_certfile, "' / --ssl-keyfile '", o.ssl_keyfile,
             "': OpenSSL could not load them as a PEM certificate and its private key");
      }
      svr = std::move(s);
    } else {
      svr = std::make_unique<GuardedServer>(connection_limits());
    }
    metrics.configure(model, 1);
    routes();
  }

  void attach(engine::Engine& e) {
    limits.defaults = SamplingDefaults::from_generation_config(read_generation_config(opts.model_dir).json);
    think_end_id = -1;
    if (e.tokenizer() && !opts.reasoning_parser.empty()) {
      if (auto id = e.tokenizer()->token_id(e.chat_format().think_end)) think_end_id = *id;
    }
    metrics.configure(model, e.max_model_len());
    if (e.has_vision()) processor = vision::load_processor_config(opts.model_dir);
    eng_ptr = &e;
    phase = kReady;
  }

  ConnectionLimits connection_limits() const {
    ConnectionLimits l;
    l.header_timeout_s = opts.header_timeout_s;
    l.read_timeout_s = opts.read_timeout_s;
    l.max_connections = opts.max_connections;
    l.max_per_client = opts.max_connections_per_client;
    return l;
  }

  engine::Engine& E() const { return *eng_ptr.load(); }
  // The folder's processor settings under the request's mm_processor_kwargs (400 naming them).
  vision::ProcessorConfig request_processor(const ChatRequest& r) const {
    if (r.mm_processor_kwargs.is_null()) return processor;
    try {
      return vision::apply_processor_overrides(processor, nlohmann::json::parse(r.mm_processor_kwargs.dump()),
                                               "mm_processor_kwargs");
    } catch (const Error& e) {
      bad_request("mm_processor_kwargs", e.what());
    }
  }
  const ChatTemplate* chat_template() const { return tmpl_override ? tmpl_override.get() : E().chat_template(); }

  void routes();
  void chat(const httplib::Request& req, httplib::Response& res);
  void completions(const httplib::Request& req, httplib::Response& res);
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void respond(std::shared_ptr<GenerationJob> job, bool stream, httplib::Response& res,
               std::shared_ptr<InflightGuard> guard);
  std::shared_ptr<RequestRecord> record(const httplib::Request& req) { return registry.find(&req); }
  std::string tag(const httplib::Request& req) {
    auto r = record(req);
    return r ? "[" + r->id + "] " : std::string();
  }

  nlohmann::ordered_json parse_body(const httplib::Request& req, bool chat) {
    nlohmann::ordered_json body;
    try {
      body = parse_ordered_json(req.body, "request body");
    } catch (const JsonError& e) {
      throw ApiError(400, e.too_deep() ? e.what() : cat("request body is not valid JSON: ", e.what()), e.field());
    }
    reject_unimplemented_fields(body, chat);
    // As vLLM: fields no API defines are accepted, with a warning naming them.
    std::vector<std::string> ignored = ignored_fields(body, chat);
    if (!ignored.empty()) {
      std::string list;
      for (const auto& f : ignored) list += (list.empty() ? "" : ", ") + f;
      log_warn(tag(req), req.path, ": the following fields were present in the request but ignored: ", list);
    }
    return body;
  }

  JobConfig job_config(const httplib::Request& req, bool chat, const std::string& name, bool stream,
                       bool include_usage, bool continuous) {
    JobConfig jc;
    jc.chat = chat;
    jc.id = make_request_id(chat ? "chatcmpl-" : "cmpl-");
    jc.model = name;
    jc.created = unix_time();
    jc.stream = stream;
    jc.include_usage = include_usage;
    jc.continuous_usage = continuous;
    jc.tokenizer = E().tokenizer();
    jc.eos_ids = E().eos_token_ids();
    jc.record = record(req);
    if (opts.request_timeout > 0) {
      jc.timeout_s = opts.request_timeout;
      jc.deadline = (jc.record ? jc.record->start : now_seconds()) + opts.request_timeout;
    }
    return jc;
  }

  // Refuses with 503 when the request's sequences would not fit in the running batch plus
  // --max-waiting-requests queued ones, and with a 400 (naming `field`) when their prompt
  // tokens (each sequence queues its prompt) or the bytes they hold while waiting
  // (Engine::work_bytes: prompt ids, images, parameters) exceed what the engine ever queues:
  // retrying such a request could never succeed. Past the engine's work-memory budget its
  // submit answers 503 (EngineBusy).
  void check_queue(int sequences, int64_t prompt_tokens, int64_t held_bytes, const char* field) {
    const int64_t cap = E().options().max_queued_tokens;
    if (prompt_tokens > cap) {
      throw ApiError(400, cat(field, ": the request would queue ", sequences, " sequences of ", prompt_tokens,
                              " prompt tokens in all (prompts x n); the server queues at most ", cap,
                              " prompt tokens at once"), field);
    }
    const int64_t byte_cap = E().options().max_queued_bytes;
    if (held_bytes > byte_cap) {
      auto mib = [](int64_t b) { return cat(b / (int64_t{1} << 20), ".", b % (int64_t{1} << 20) * 10 / (int64_t{1} << 20), " MiB"); };
      throw ApiError(400, cat(field, ": the request's ", sequences, " sequences would hold about ", mib(held_bytes),
                              " while waiting (prompt ids, images and parameters, for each of prompts x n); the "
                              "server holds at most ", mib(byte_cap), " of waiting work"), field);
    }
    engine::EngineStats s = E().stats();
    int64_t room = static_cast<int64_t>(opts.max_num_seqs) + opts.max_waiting - s.active - s.queued;
    if (sequences > room) {
      metrics.count_rejected();
      throw ApiError(503, cat("the server is busy: ", s.active, " running and ", s.queued, " waiting requests (",
                              "--max-num-seqs ", opts.max_num_seqs, ", --max-waiting-requests ", opts.max_waiting,
                              "); retry later"),
                     "", "queue_full");
    }
  }

  // Queues n samples of one prompt (seed + i for the i-th); if the engine refuses one,
  // everything queued for this HTTP request so far is cancelled before the error goes on.
  // `prompt_len`: the prompt's length as the engine runs it (image placeholders expanded).
  void submit_choices(const std::vector<int>& ids, int64_t prompt_len, const engine::GenParams& gen, int n,
                      std::vector<JobChoice>& out, const std::shared_ptr<RequestRecord>& rec) {
    try {
      for (int i = 0; i < n; ++i) {
        engine::GenParams g = gen;
        if (g.seed && i > 0) g.seed = *g.seed + static_cast<uint64_t>(i);
        JobChoice c;
        c.stream = E().submit(ids, g);
        c.prompt_tokens = i == 0 ? prompt_len : 0;
        if (gen.prompt_logprobs >= 0) c.prompt_ids = ids;
        if (rec) rec->prompt_tokens += c.prompt_tokens;
        out.push_back(std::move(c));
      }
    } catch (...) {
      for (auto& c : out) c.stream->cancel();
      throw;
    }
  }
};

void HttpServer::Impl::routes() {
  httplib::Server& s = *svr;
  // A thread per open connection, made on demand: --max-connections normal ones, the
  // overflow ones that answer /health over the bounds, and a few more for quick refusals
  // (connection_guard.h), so idle or half-sent connections cannot starve /health.
  size_t max_conns = static_cast<size_t>(opts.max_connections + ConnectionLimits{}.overflow + 16);
  size_t keep = static_cast<size_t>(std::max(16, opts.max_num_seqs + 8));
  s.new_task_queue = [max_conns, keep] { return new ConnectionPool(max_conns, keep); };
  s.set_keep_alive_max_count(1000);
  s.set_keep_alive_timeout(5);
  // Per read of a body (the headers have --header-timeout in all: connection_guard.h).
  s.set_read_timeout(opts.read_timeout_s, 0);
  s.set_write_timeout(60, 0);
  s.set_payload_max_length(kMaxBodyBytes);
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto rec = registry.begin(&req, request_id_from_header(req.get_header_value("X-Request-Id")), now_seconds());
    res.set_header("X-Request-Id", rec->id);
    CorsAnswer c = cors_answer(cors, req.method, req.get_header_value("Origin"),
                               req.get_header_value("Access-Control-Request-Method"),
                               req.get_header_value("Access-Control-Request-Headers"), req.has_header("Cookie"));
    for (const auto& [k, v] : c.headers) res.set_header(k.c_str(), v);
    if (c.preflight) {
      res.status = c.status;
      res.set_content(c.body, "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A request body must come with a Content-Length. httplib 0.11 bounds a body by
    // set_payload_max_length only then: a chunked body, or a POST with neither header (read
    // until the client closes), would be buffered whole, without bound. The body is not read
    // here, so the connection is closed after the answer.
    if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      const bool chunked = req.has_header("Transfer-Encoding");
      if (chunked || !req.has_header("Content-Length")) {
        res.set_header("Connection", "close");
        close_connection_after_response();
        send_error(res, ApiError(411, chunked ? "request bodies must be sent with a Content-Length header, not "
                                                "Transfer-Encoding (the body was not read)"
                                              : "a request body needs a Content-Length header (Content-Length: 0 "
                                                "for none)",
                                 "", "length_required"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (overflow_connection() && req.path != "/health" && req.path != "/ping" && req.path != "/metrics" &&
        req.path != "/version") {
      res.set_header("Connection", "close");
      close_connection_after_response();
      send_error(res, ApiError(503, "too many connections (--max-connections, --max-connections-per-client): "
                                    "only /health, /ping, /metrics and /version are answered; retry later",
                               "", "too_many_connections"));
      return httplib::Server::HandlerResponse::Handled;
    }
    bool api = req.path.rfind("/v1/", 0) == 0;
    if (!opts.api_key.empty() && api) {
      if (!api_key_matches(req.get_header_value("Authorization"), opts.api_key)) {
        send_error(res, ApiError(401, "Incorrect API key provided.", "", "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    bool needs_model = api || req.path == "/tokenize" || req.path == "/detokenize";
    if (needs_model && phase != kReady) {
      send_error(res, phase == kLoading ? ApiError(503, "the model is still loading; retry shortly", "", "loading")
                                        : ApiError(503, "the server is shutting down", "", "shutting_down"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Called once each response has been written (streams included): the access-log line.
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    auto rec = registry.end(&req);
    metrics.count_request(handler_label(req.path), req.method, res.status);
    if (!opts.access_log || !rec) return;
    log_info(access_log_line(req.remote_addr, req.method, req.path, res.status, *rec, now_seconds() - rec->start));
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      send_error(res, ApiError(404, "Not found: " + req.method + " " + req.path, "", "not_found"));
    } else if (res.status == 405 && res.body.empty()) {
      send_error(res, ApiError(405, "Method not allowed: " + req.method + " " + req.path));
    } else if (res.status >= 400 && res.body.empty()) {
      // httplib's own refusals (body over the limit, unparsable request line or headers)
      // come with no body; give them the OpenAI error shape too.
      send_error(res, ApiError(res.status, http_refusal_message(res.status)));
      // What follows on the connection is no request boundary we can trust: close it.
      if (!res.has_header("Connection")) res.set_header("Connection", "close");
      close_connection_after_response();
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    // The detail goes to the log only; the client gets the request id to quote.
    auto rec = record(req);
    std::string id = rec ? rec->id : make_request_id("err-");
    log_error("[", id, "] ", req.method, " ", req.path, ": request failed: ", what);
    send_error(res, ApiError(500, cat("internal error (request id ", id, ")")));
  });
  auto health = [this](const httplib::Request&, httplib::Response& res) {
    if (phase == kReady) {
      res.status = 200;
    } else {
      send_error(res, phase == kLoading ? ApiError(503, "the model is still loading", "", "loading")
                                        : ApiError(503, "the server is shutting down", "", "shutting_down"));
    }
  };
  s.Get("/health", health);
  s.Get("/ping", health);
  s.Post("/ping", health);
  s.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"version", kQinferVersion}});
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(web_ui_page(), "text/html; charset=utf-8");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    for (const auto& n : limits.model_names) {
      data.push_back({{"id", n}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "qinfer"},
                      {"root", n}, {"parent", nullptr}, {"max_model_len", E().max_model_len()}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    engine::Engine* e = eng_ptr.load();
    engine::EngineStats st = e ? e->stats() : engine::EngineStats{};
    res.set_content(metrics.render(st, opts.max_num_seqs, e ? e->max_model_len() : 1),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  auto wrap = [this](void (Impl::*fn)(const httplib::Request&, httplib::Response&)) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*fn)(req, res);
      } catch (const ApiError& e) {
        if (e.status() >= 500) log_warn(tag(req), req.path, ": ", e.what());
        send_error(res, e);
      } catch (const engine::EngineBusy& e) {
        send_error(res, ApiError(503, e.what(), "", "server_overloaded"));  // send_error adds Retry-After
      } catch (const Error& e) {
        // Engine-side validation (sampling parameters, context length, token ids).
        send_error(res, ApiError(400, e.what()));
      }
    };
  };
  s.Post("/v1/chat/completions", wrap(&Impl::chat));
  s.Post("/v1/completions", wrap(&Impl::completions));
  s.Post("/tokenize", wrap(&Impl::tokenize));
  s.Post("/detokenize", wrap(&Impl::detokenize));
}

namespace {
// /tokenize and /detokenize: the body parsed (a 400 when it is not JSON), then answered by `fn`.
template <class Fn>
void answer_tokenizer_request(const httplib::Request& req, httplib::Response& res, const TokenizeContext& ctx, Fn fn) {
  nlohmann::ordered_json body;
  try {
    body = parse_ordered_json(req.body, "request body");
  } catch (const JsonError& e) {
    throw ApiError(400, e.too_deep() ? e.what() : cat("request body is not valid JSON: ", e.what()), e.field());
  }
  send_json(res, 200, fn(body, ctx));
}
}  // namespace

void HttpServer::Impl::tokenize(const httplib::Request& req, httplib::Response& res) {
  TokenizeContext ctx{E().tokenizer(), chat_template(), E().max_model_len(), &limits,
                      opts.default_chat_template_kwargs, E().chat_format()};
  answer_tokenizer_request(req, res, ctx, tokenize_request);
}

void HttpServer::Impl::detokenize(const httplib::Request& req, httplib::Response& res) {
  TokenizeContext ctx{E().tokenizer(), chat_template(), E().max_model_len(), &limits,
                      opts.default_chat_template_kwargs, E().chat_format()};
  answer_tokenizer_request(req, res, ctx, detokenize_request);
}

void HttpServer::Impl::respond(std::shared_ptr<GenerationJob> job, bool stream, httplib::Response& res,
                               std::shared_ptr<InflightGuard> guard) {
  res.status = 200;
  if (stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // nginx: pass the events through at once
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, job, guard](size_t, httplib::DataSink& sink) {
          if (stopping) return false;  // server shutting down: the releaser cancels the job
          bool ok = true;
          bool more = job->pump_stream(
              [&](const std::string& s) { return ok = sink.write(s.data(), s.size()); }, kPollSeconds);
          if (!ok) return false;  // client gone: the job was cancelled
          if (!more) sink.done();
          return true;
        },
        [job](bool) { job->cancel(); });
    return;
  }
  if (opts.request_timeout > 0) {
    // With a deadline the answer is waited for here, so that a timeout can still be a
    // 504 status (a vanished client is noticed at the deadline at the latest).
    while (!job->pump_collect(kPollSeconds)) {
      if (stopping) {
        job->cancel();
        throw ApiError(503, "the server is shutting down", "", "shutting_down");
      }
    }
    if (job->timed_out()) throw ApiError(504, job->timeout_message(), "", "request_timeout");
    if (job->failed()) throw ApiError(500, "generation failed: " + job->error_message());
    send_json(res, 200, job->final_response());
    return;
  }
  // Non-streaming: wait for the whole answer. While waiting, a space (JSON allows
  // leading whitespace) now and then finds out whether the client is still there,
  // so a vanished client frees its sequence at once.
  auto last_write = std::make_shared<double>(now_seconds());
  res.set_chunked_content_provider(
      "application/json",
      [this, job, last_write, guard](size_t, httplib::DataSink& sink) {
        if (stopping) return false;
        if (!job->pump_collect(kPollSeconds)) {
          if (now_seconds() - *last_write > kHeartbeatSeconds) {
            *last_write = now_seconds();
            if (!sink.write(" ", 1)) {
              job->cancel();
              return false;
            }
          }
          return true;
        }
        json body = job->final_response();
        if (job->failed()) {
          std::string id = make_request_id("err-");
          log_error("generation failed (request id ", id, "): ", job->error_message());
          body = ApiError(500, cat("internal error (request id ", id, ")")).to_json();
        }
        std::string s = dump_json(body);
        sink.write(s.data(), s.size());
        sink.done();
        return true;
      },
      [job](bool) { job->cancel(); });
}

void HttpServer::Impl::chat(const httplib::Request& req, httplib::Response& res) {
  auto busy = std::make_shared<InflightGuard>(inflight);
  ChatRequest r = parse_chat_request(parse_body(req, true), limits);
  const Tokenizer* tok = E().tokenizer();
  const ChatTemplate* tmpl = chat_template();
  if (!tok || !tmpl) {
    throw ApiError(400, cat("model '", model, "' has no tokenizer/chat template, so chat completions are "
                            "unavailable; use /v1/completions with the prompt as token ids"));
  }
  if (r.image_count > 0 && opts.language_model_only) {
    throw ApiError(400, "image input is disabled on this server (--language-model-only)", "messages");
  }
  if (r.image_count > 0 && !E().has_vision()) {
    throw ApiError(400, cat("image input: model '", model, "' has no vision tower loaded (the checkpoint has no "
                            "model.visual.* weights, or the server runs with --limit-mm-per-prompt "
                            "'{\"image\": 0}'); send text only"), "messages");
  }
  if (r.image_count > 0 && r.gen.prompt_logprobs >= 0) {
    throw ApiError(400, "prompt_logprobs: not supported together with image input by this server",
                   "prompt_logprobs");
  }
  bool tools_on = r.tools.is_array() && r.tool_choice != ToolChoice::kNone;
  if (r.tool_choice == ToolChoice::kAuto && (!opts.enable_auto_tool_choice || opts.tool_call_parser.empty())) {
    throw ApiError(400, "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                   "tool_choice");
  }
  if (tools_on && opts.tool_call_parser.empty()) {
    throw ApiError(400, "tool calls need --tool-call-parser qwen3_coder", "tool_choice");
  }
  const chat::ChatFormat& format = E().chat_format();
  std::string prompt = render_chat_prompt(r, *tmpl, format, opts.default_chat_template_kwargs);
  // tool_choice "required" / named: the call is forced by writing its opening tags into
  // the prompt (thinking closed first), and its remainder constrained by a grammar below.
  std::string forced;
  // As vLLM's is_reasoning_end on the prompt: output starts as reasoning unless the
  // prompt already closed the think block (enable_thinking=false, continued answers).
  bool thinking = !chat::prompt_ends_reasoning(prompt);
  const bool force_call = r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed;
  if (force_call) {
    forced = format.forced_tool_call(thinking, r.tool_choice == ToolChoice::kNamed
                                                   ? std::optional<std::string_view>(r.tool_choice_name)
                                                   : std::nullopt);
    prompt += forced;
  }
  // Tokenized only up to the context length: a longer prompt is refused without encoding the rest.
  // (A prompt cut short is refused here, before its images are fetched.)
  Tokenizer::Bounded enc = tok->encode_bounded(prompt, true, static_cast<size_t>(E().max_model_len()));
  if (!enc.complete) E().check_context(static_cast<int64_t>(enc.tokens), r.gen.max_tokens, true);
  std::vector<int> ids = std::move(enc.ids);
  // Images: fetched, decoded and preprocessed here (each failure a 400 naming its part); the
  // engine expands each <|image_pad|> to the image's token count, which usage counts too.
  int64_t prompt_len = static_cast<int64_t>(ids.size());
  if (r.image_count > 0) {
    r.gen.images = load_request_images(r.images, request_processor(r), opts.media);
    for (const auto& im : *r.gen.images) prompt_len += im.merged_tokens(processor.merge_size) - 1;
  }
  E().check_context(prompt_len, r.gen.max_tokens);
  // Structured outputs: the forced tool call's remainder, or response_format / guided_*;
  // with thinking on (and a reasoning parser) the constraint starts after the think end.
  std::optional<grammar::Spec> spec = r.structured;
  if (force_call) {
    if (spec) {
      throw ApiError(400, cat(spec->field, ": cannot be combined with tool_choice 'required' or a named function"),
                     spec->field.substr(0, spec->field.find('.')));
    }
    spec = tool_call_spec(r.tools, r.tool_choice == ToolChoice::kNamed ? r.tool_choice_name : "");
  }
  if (spec) {
    r.gen.grammar = compile_structured(E().grammar_compiler(), *spec);
    if (thinking && forced.empty() && think_end_id >= 0) r.gen.grammar_start_after = think_end_id;
  }
  check_queue(r.n, prompt_len * r.n, E().work_bytes(prompt_len, r.gen).held * r.n, r.n > 1 ? "n" : "messages");

  ChatOutputConfig oc;
  oc.reasoning = !opts.reasoning_parser.empty();
  oc.thinking = thinking;
  oc.tools = tools_on;
  oc.tool_defs = json::parse(r.tools.dump());
  oc.parallel_tool_calls = r.parallel_tool_calls;
  oc.include_reasoning = r.include_reasoning;

  JobConfig jc = job_config(req, true, r.model, r.stream, r.include_usage, r.continuous_usage);
  jc.logprobs = r.logprobs;
  jc.named_tool_choice = r.tool_choice == ToolChoice::kNamed;
  jc.think_end_id = (oc.reasoning && thinking) ? think_end_id : -1;
  jc.reasoning_closed = force_call && thinking;  // the forced call closed thinking itself
  jc.prompt_logprobs = r.gen.prompt_logprobs >= 0;
  jc.n = r.n;
  jc.max_tokens = r.gen.max_tokens;

  std::vector<JobChoice> choices;
  submit_choices(ids, prompt_len, r.gen, r.n, choices, jc.record);
  for (auto& c : choices) {
    c.chat = std::make_unique<ChatOutput>(oc);
    c.prefix = forced;
  }
  respond(std::make_shared<GenerationJob>(std::move(jc), std::move(choices), &metrics), r.stream, res, busy);
}

void HttpServer::Impl::completions(const httplib::Request& req, httplib::Response& res) {
  auto busy = std::make_shared<InflightGuard>(inflight);
  nlohmann::ordered_json body = parse_body(req, false);
  CompletionRequest r = parse_completion_request(body, limits);
  const Tokenizer* tok = E().tokenizer();
  std::vector<std::vector<int>> prompts = r.prompt_ids;
  std::vector<std::string> echoes;
  for (const auto& ids : r.prompt_ids) echoes.push_back(tok ? tok->decode(ids, false) : std::string());
  if (!r.prompt_texts.empty() && !tok) {
    throw ApiError(400, cat("model '", model, "' has no tokenizer; send the prompt as an array of token ids"),
                   "prompt");
  }
  for (const auto& t : r.prompt_texts) {
    // Tokenized only up to the context length: a longer text is refused without encoding the rest.
    Tokenizer::Bounded enc = tok->encode_bounded(t, true, static_cast<size_t>(E().max_model_len()));
    if (!enc.complete) E().check_context(static_cast<int64_t>(enc.tokens), r.gen.max_tokens, true);
    prompts.push_back(std::move(enc.ids));
    echoes.push_back(t);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw ApiError(400, "prompt: encodes to no tokens", "prompt");
    E().check_context(static_cast<int64_t>(prompts[i].size()), r.gen.max_tokens);
  }
  int64_t queued_tokens = 0, held_bytes = 0;
  for (const auto& p : prompts) {
    queued_tokens += static_cast<int64_t>(p.size()) * r.n;
    held_bytes += E().work_bytes(static_cast<int64_t>(p.size()), r.gen).held * r.n;
  }
  check_queue(static_cast<int>(prompts.size()) * r.n, queued_tokens, held_bytes, "prompt");
  if (r.structured) r.gen.grammar = compile_structured(E().grammar_compiler(), *r.structured);
  JobConfig jc = job_config(req, false, r.model, r.stream, r.include_usage, r.continuous_usage);
  jc.logprobs = r.gen.logprobs >= 0;
  jc.return_token_ids = !tok || (body.contains("return_token_ids") && body["return_token_ids"] == true);
  jc.prompt_logprobs = r.gen.prompt_logprobs >= 0;
  jc.echo_logprobs = r.echo_logprobs;
  jc.n = r.n;
  jc.max_tokens = r.gen.max_tokens;
  std::vector<JobChoice> choices;
  for (size_t p = 0; p < prompts.size(); ++p) {
    size_t first = choices.size();
    submit_choices(prompts[p], static_cast<int64_t>(prompts[p].size()), r.gen, r.n, choices, jc.record);
    for (size_t i = first; i < choices.size() && r.echo; ++i) choices[i].echo = echoes[p];
  }
  respond(std::make_shared<GenerationJob>(std::move(jc), std::move(choices), &metrics), r.stream, res, busy);
}

HttpServer::HttpServer(engine::Engine& engine, const ServeOptions& opts) : impl_(std::make_unique<Impl>(opts)) {
  impl_->attach(engine);
}

HttpServer::HttpServer(const ServeOptions& opts) : impl_(std::make_unique<Impl>(opts)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::attach(engine::Engine& engine) { impl_->attach(engine); }

int HttpServer::bind() {
  int port = impl_->opts.port;
  if (port == 0) {
    port = impl_->svr->bind_to_any_port(impl_->opts.host);
    if (port < 0) fail("cannot bind ", impl_->opts.host, " (any port)");
  } else if (!impl_->svr->bind_to_port(impl_->opts.host, port)) {
    fail("cannot bind ", impl_->opts.host, ":", port, " (in use, or not a local address)");
  }
  return port;
}

void HttpServer::serve() {
  impl_->serve_entered = true;
  if (!impl_->stopping) impl_->svr->listen_after_bind();
  impl_->serve_returned = true;
}

void HttpServer::stop() {
  impl_->stopping = true;
  if (impl_->serve_entered) {  // it may be between the stopping check and the listen loop's start
    while (!impl_->svr->is_running() && !impl_->serve_returned) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (impl_->svr->is_running()) impl_->svr->stop();
}

void HttpServer::drain(double deadline_s) {
  impl_->phase = kDraining;
  double end = now_seconds() + deadline_s;
  log_info("draining: ", impl_->inflight.load(), " request(s) running; new requests get 503; waiting up to ",
           deadline_s, " s");
  while (impl_->inflight.load() > 0 && now_seconds() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (impl_->inflight.load() > 0) {
    log_warn("drain deadline passed with ", impl_->inflight.load(), " request(s) still running; ending them");
  } else {
    log_info("drained: no request running");
  }
  stop();
}

int HttpServer::requests_in_flight() const { return impl_->inflight.load(); }

bool HttpServer::draining() const { return impl_->phase == kDraining; }

const std::string& HttpServer::model_name() const { return impl_->model; }

}  // namespace qinfer::server
