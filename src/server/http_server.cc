#include "server/http_server.h"

#include <atomic>
#include <filesystem>
#include <fstream>

#include <httplib.h>

#include "chat/reasoning_parser.h"
#include "jinja/chat_template.h"
#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/structured_output.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace qinfer::server {

using json = nlohmann::json;

namespace {

constexpr double kPollSeconds = 0.05;
constexpr double kHeartbeatSeconds = 0.5;

nlohmann::ordered_json read_generation_config(const std::string& dir) {
  auto p = std::filesystem::path(dir) / "generation_config.json";
  if (!std::filesystem::exists(p)) return nlohmann::ordered_json::object();
  std::ifstream f(p);
  try {
    return nlohmann::ordered_json::parse(f);
  } catch (const json::exception& e) {
    fail(p.string(), ": not valid JSON: ", e.what());
  }
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status(), e.to_json()); }

nlohmann::ordered_json parse_body(const httplib::Request& req, bool chat) {
  nlohmann::ordered_json body;
  try {
    body = nlohmann::ordered_json::parse(req.body);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("request body is not valid JSON: ") + e.what());
  }
  // As vLLM: unknown fields are accepted, with a warning naming them.
  std::vector<std::string> ignored = ignored_fields(body, chat);
  if (!ignored.empty()) {
    std::string list;
    for (const auto& f : ignored) list += (list.empty() ? "" : ", ") + f;
    log_warn(req.path, ": the following fields were present in the request but ignored: ", list);
  }
  return body;
}

}  // namespace

struct HttpServer::Impl {
  engine::Engine& eng;
  ServeOptions opts;
  RequestLimits limits;
  std::string model;
  httplib::Server svr;
  Metrics metrics;
  int think_end_id = -1;
  std::atomic<bool> stopping{false};  // set by stop(): running responses end at once

  Impl(engine::Engine& e, const ServeOptions& o) : eng(e), opts(o) {
    limits.model_names = o.served_model_names;
    if (limits.model_names.empty()) limits.model_names.push_back(o.model_dir);
    model = limits.model_names.front();
    limits.max_images_per_prompt = o.max_images_per_prompt;
    limits.defaults = SamplingDefaults::from_generation_config(read_generation_config(o.model_dir));
    if (eng.tokenizer() && !opts.reasoning_parser.empty()) {
      if (auto id = eng.tokenizer()->token_id("</think>")) think_end_id = *id;
    }
    routes();
  }

  void routes();
  void chat(const httplib::Request& req, httplib::Response& res);
  void completions(const httplib::Request& req, httplib::Response& res);
  void respond(std::shared_ptr<GenerationJob> job, bool stream, httplib::Response& res);

  JobConfig job_config(bool chat, const std::string& name, bool stream, bool include_usage, bool continuous) {
    JobConfig jc;
    jc.chat = chat;
    jc.id = make_request_id(chat ? "chatcmpl-" : "cmpl-");
    jc.model = name;
    jc.created = unix_time();
    jc.stream = stream;
    jc.include_usage = include_usage;
    jc.continuous_usage = continuous;
    jc.tokenizer = eng.tokenizer();
    jc.eos_ids = eng.eos_token_ids();
    return jc;
  }

  // Queues n samples of one prompt (seed + i for the i-th); if the engine refuses one,
  // everything queued for this HTTP request so far is cancelled before the error goes on.
  void submit_choices(const std::vector<int>& ids, const engine::GenParams& gen, int n,
                      std::vector<JobChoice>& out) {
    try {
      for (int i = 0; i < n; ++i) {
        engine::GenParams g = gen;
        if (g.seed && i > 0) g.seed = *g.seed + static_cast<uint64_t>(i);
        JobChoice c;
        c.stream = eng.submit(ids, g);
        c.prompt_tokens = i == 0 ? static_cast<int64_t>(ids.size()) : 0;
        out.push_back(std::move(c));
      }
    } catch (...) {
      for (auto& c : out) c.stream->cancel();
      throw;
    }
  }
};

void HttpServer::Impl::routes() {
  // Enough workers for every running sequence, the queue and a few probes.
  int workers = std::max(16, opts.max_num_seqs * 2 + 8);
  svr.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  svr.set_keep_alive_max_count(1000);
  svr.set_read_timeout(60, 0);
  svr.set_write_timeout(60, 0);
  svr.set_payload_max_length(64 << 20);
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!opts.api_key.empty() && req.path.rfind("/v1/", 0) == 0) {
      std::string h = req.get_header_value("Authorization");
      if (h != "Bearer " + opts.api_key) {
        send_error(res, ApiError(401, "Incorrect API key provided.", "", "invalid_api_key"));
        metrics.count_request(req.path, 401);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      send_error(res, ApiError(404, "Not found: " + req.method + " " + req.path, "", "not_found"));
    } else if (res.status == 405 && res.body.empty()) {
      send_error(res, ApiError(405, "Method not allowed: " + req.method + " " + req.path));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log_error("request failed: ", what);
    send_error(res, ApiError(500, what));
  });
  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    metrics.count_request("/health", 200);
  });
  svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json data = json::array();
    for (const auto& n : limits.model_names) {
      data.push_back({{"id", n}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "qinfer"},
                      {"root", opts.model_dir}, {"parent", nullptr}, {"max_model_len", eng.max_model_len()}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
    metrics.count_request("/v1/models", 200);
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(eng.stats(), model), "text/plain; version=0.0.4");
  });
  auto wrap = [this](const char* name, void (Impl::*fn)(const httplib::Request&, httplib::Response&)) {
    return [this, name, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*fn)(req, res);
        metrics.count_request(name, res.status);
      } catch (const ApiError& e) {
        send_error(res, e);
        metrics.count_request(name, e.status());
      } catch (const Error& e) {
        // Engine-side validation (sampling parameters, context length, token ids).
        send_error(res, ApiError(400, e.what()));
        metrics.count_request(name, 400);
      }
    };
  };
  svr.Post("/v1/chat/completions", wrap("/v1/chat/completions", &Impl::chat));
  svr.Post("/v1/completions", wrap("/v1/completions", &Impl::completions));
}

void HttpServer::Impl::respond(std::shared_ptr<GenerationJob> job, bool stream, httplib::Response& res) {
  res.status = 200;
  if (stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, job](size_t, httplib::DataSink& sink) {
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
  // Non-streaming: wait for the whole answer. While waiting, a space (JSON allows
  // leading whitespace) now and then finds out whether the client is still there,
  // so a vanished client frees its sequence at once.
  auto last_write = std::make_shared<double>(now_seconds());
  res.set_chunked_content_provider(
      "application/json",
      [this, job, last_write](size_t, httplib::DataSink& sink) {
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
        json body = job->failed() ? ApiError(500, "generation failed: " + job->error_message()).to_json()
                                  : job->final_response();
        std::string s = dump_json(body);
        sink.write(s.data(), s.size());
        sink.done();
        return true;
      },
      [job](bool) { job->cancel(); });
}

void HttpServer::Impl::chat(const httplib::Request& req, httplib::Response& res) {
  ChatRequest r = parse_chat_request(parse_body(req, true), limits);
  const Tokenizer* tok = eng.tokenizer();
  if (!tok || !eng.chat_template()) {
    throw ApiError(400, cat("model '", model, "' has no tokenizer/chat template, so chat completions are "
                            "unavailable; use /v1/completions with the prompt as token ids"));
  }
  if (r.image_count > 0) {
    throw ApiError(400, "image input is not supported by this server yet (no vision encoder)", "messages");
  }
  bool tools_on = r.tools.is_array() && r.tool_choice != ToolChoice::kNone;
  if (r.tool_choice == ToolChoice::kAuto && (!opts.enable_auto_tool_choice || opts.tool_call_parser.empty())) {
    throw ApiError(400, "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                   "tool_choice");
  }
  if (tools_on && opts.tool_call_parser.empty()) {
    throw ApiError(400, "tool calls need --tool-call-parser qwen3_coder", "tool_choice");
  }
  nlohmann::ordered_json kwargs = r.chat_template_kwargs;
  if (!kwargs.contains("enable_thinking") && !r.enable_thinking) kwargs["enable_thinking"] = false;
  std::string prompt;
  try {
    prompt = eng.chat_template()->apply(r.messages, r.tools.is_array() ? r.tools : nlohmann::ordered_json(nullptr),
                                        r.add_generation_prompt, kwargs);
  } catch (const Error& e) {
    throw ApiError(400, cat("chat template: ", e.what()), "messages");
  }
  if (r.continue_final_message) {
    // Continue the last assistant message: drop the end-of-turn the template closed it with.
    for (const char* tail : {"<|im_end|>\n", "<|im_end|>"}) {
      std::string t = tail;
      if (prompt.size() >= t.size() && prompt.compare(prompt.size() - t.size(), t.size(), t) == 0) {
        prompt.resize(prompt.size() - t.size());
        break;
      }
    }
  }
  // tool_choice "required" / named: there is no guided decoding here; the call is
  // forced by writing its opening tags into the prompt (thinking closed first).
  std::string forced;
  // As vLLM's is_reasoning_end on the prompt: output starts as reasoning unless the
  // prompt already closed the think block (enable_thinking=false, continued answers).
  bool thinking = !chat::prompt_ends_reasoning(prompt);
  if (r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed) {
    if (thinking) forced += "</think>\n\n";
    forced += "<tool_call>\n<function=";
    if (r.tool_choice == ToolChoice::kNamed) forced += r.tool_choice_name + ">\n";
    prompt += forced;
  }
  std::vector<int> ids = tok->encode(prompt, true);
  eng.check_context(static_cast<int64_t>(ids.size()), r.gen.max_tokens);
  // Structured outputs: the forced tool call's remainder, or response_format / guided_*;
  // with thinking on (and a reasoning parser) the constraint starts after </think>.
  std::optional<grammar::Spec> spec = r.structured;
  if (r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed) {
    if (spec) {
      throw ApiError(400, cat(spec->field, ": cannot be combined with tool_choice 'required' or a named function"),
                     spec->field.substr(0, spec->field.find('.')));
    }
    spec = tool_call_spec(r.tools, r.tool_choice == ToolChoice::kNamed ? r.tool_choice_name : "");
  }
  if (spec) {
    r.gen.grammar = compile_structured(eng, *spec);
    if (thinking && forced.empty() && think_end_id >= 0) r.gen.grammar_start_after = think_end_id;
  }

  ChatOutputConfig oc;
  oc.reasoning = !opts.reasoning_parser.empty();
  oc.thinking = thinking;
  oc.tools = tools_on;
  oc.tool_defs = json::parse(r.tools.dump());
  oc.parallel_tool_calls = r.parallel_tool_calls;
  oc.include_reasoning = r.include_reasoning;

  JobConfig jc = job_config(true, r.model, r.stream, r.include_usage, r.continuous_usage);
  jc.logprobs = r.logprobs;
  jc.named_tool_choice = r.tool_choice == ToolChoice::kNamed;
  jc.think_end_id = (oc.reasoning && thinking) ? think_end_id : -1;
  jc.reasoning_closed = forced.rfind("</think>", 0) == 0;  // the forced call closed thinking itself

  std::vector<JobChoice> choices;
  submit_choices(ids, r.gen, r.n, choices);
  for (auto& c : choices) {
    c.chat = std::make_unique<ChatOutput>(oc);
    c.prefix = forced;
  }
  respond(std::make_shared<GenerationJob>(std::move(jc), std::move(choices), &metrics), r.stream, res);
}

void HttpServer::Impl::completions(const httplib::Request& req, httplib::Response& res) {
  nlohmann::ordered_json body = parse_body(req, false);
  CompletionRequest r = parse_completion_request(body, limits);
  const Tokenizer* tok = eng.tokenizer();
  std::vector<std::vector<int>> prompts = r.prompt_ids;
  std::vector<std::string> echoes;
  for (const auto& ids : r.prompt_ids) echoes.push_back(tok ? tok->decode(ids, false) : std::string());
  if (!r.prompt_texts.empty() && !tok) {
    throw ApiError(400, cat("model '", model, "' has no tokenizer; send the prompt as an array of token ids"),
                   "prompt");
  }
  for (const auto& t : r.prompt_texts) {
    prompts.push_back(tok->encode(t, true));
    echoes.push_back(t);
  }
  for (const auto& p : prompts) {
    if (p.empty()) throw ApiError(400, "prompt: encodes to no tokens", "prompt");
    eng.check_context(static_cast<int64_t>(p.size()), r.gen.max_tokens);
  }
  if (r.structured) r.gen.grammar = compile_structured(eng, *r.structured);
  JobConfig jc = job_config(false, r.model, r.stream, r.include_usage, r.continuous_usage);
  jc.logprobs = r.gen.logprobs >= 0;
  jc.return_token_ids = !tok || (body.contains("return_token_ids") && body["return_token_ids"] == true);
  std::vector<JobChoice> choices;
  for (size_t p = 0; p < prompts.size(); ++p) {
    size_t first = choices.size();
    submit_choices(prompts[p], r.gen, r.n, choices);
    for (size_t i = first; i < choices.size() && r.echo; ++i) choices[i].echo = echoes[p];
  }
  respond(std::make_shared<GenerationJob>(std::move(jc), std::move(choices), &metrics), r.stream, res);
}

HttpServer::HttpServer(engine::Engine& engine, const ServeOptions& opts)
    : impl_(std::make_unique<Impl>(engine, opts)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  int port = impl_->opts.port;
  if (port == 0) {
    port = impl_->svr.bind_to_any_port(impl_->opts.host);
    if (port < 0) fail("cannot bind ", impl_->opts.host, " (any port)");
  } else if (!impl_->svr.bind_to_port(impl_->opts.host, port)) {
    fail("cannot bind ", impl_->opts.host, ":", port, " (in use, or not a local address)");
  }
  return port;
}

void HttpServer::serve() { impl_->svr.listen_after_bind(); }

void HttpServer::stop() {
  impl_->stopping = true;
  if (impl_->svr.is_running()) impl_->svr.stop();
}

const std::string& HttpServer::model_name() const { return impl_->model; }

}  // namespace qinfer::server
