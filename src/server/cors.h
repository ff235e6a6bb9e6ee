// CORS as vLLM does it (Starlette's CORSMiddleware with --allowed-origins, --allowed-methods,
// --allowed-headers, --allow-credentials; defaults ["*"], ["*"], ["*"], false):
//  * a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here:
//    200 with the Allow-* headers, or 400 "Disallowed CORS origin, method, headers";
//  * any other request carrying an allowed Origin gets Access-Control-Allow-Origin
//    (and -Credentials) added to its response; a disallowed one gets nothing added.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace qinfer::server {

struct CorsPolicy {
  std::vector<std::string> origins = {"*"}, methods = {"*"}, headers = {"*"};
  bool credentials = false;
};

struct CorsAnswer {
  bool preflight = false;                                   // answer now, without routing
  int status = 200;                                         // preflight only
  std::string body;                                         // preflight only
  std::vector<std::pair<std::string, std::string>> headers;  // to add to the response
};

// origin: the Origin header ("" when absent); request_method / request_headers: the
// Access-Control-Request-* headers of a preflight; cookie: whether a Cookie header came.
CorsAnswer cors_answer(const CorsPolicy& p, const std::string& method, const std::string& origin,
                       const std::string& request_method, const std::string& request_headers, bool cookie);

}  // namespace qinfer::server
