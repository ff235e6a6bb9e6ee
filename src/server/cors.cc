#include "server/cors.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace qinfer::server {

namespace {

const char* const kAllMethods[] = {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
const char* const kSafelisted[] = {"Accept", "Accept-Language", "Content-Language", "Content-Type"};

bool has_star(const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), "*") != v.end(); }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

CorsAnswer cors_answer(const CorsPolicy& p, const std::string& method, const std::string& origin,
                       const std::string& request_method, const std::string& request_headers, bool cookie) {
  CorsAnswer a;
  if (origin.empty()) return a;
  bool all_origins = has_star(p.origins), all_headers = has_star(p.headers);
  bool origin_ok = all_origins || std::find(p.origins.begin(), p.origins.end(), origin) != p.origins.end();
  std::vector<std::string> methods;
  if (has_star(p.methods)) methods.assign(std::begin(kAllMethods), std::end(kAllMethods));
  else methods = p.methods;
  bool explicit_origin = !all_origins || p.credentials;

  if (method == "OPTIONS" && !request_method.empty()) {
    a.preflight = true;
    std::vector<std::string> failures;
    if (!origin_ok) failures.push_back("origin");
    if (std::find(methods.begin(), methods.end(), request_method) == methods.end()) failures.push_back("method");
    std::set<std::string> allowed_lower;
    std::vector<std::string> allow_headers_list;
    {
      std::set<std::string> names;
      for (const char* h : kSafelisted) names.insert(h);
      for (const auto& h : p.headers) if (h != "*") names.insert(h);
      for (const auto& h : names) {
        allow_headers_list.push_back(h);
        allowed_lower.insert(lower(h));
      }
    }
    if (!all_headers && !request_headers.empty()) {
      size_t pos = 0;
      while (pos <= request_headers.size()) {
        size_t c = request_headers.find(',', pos);
        std::string h = lower(trim(request_headers.substr(pos, c == std::string::npos ? std::string::npos : c - pos)));
        if (!h.empty() && !allowed_lower.count(h)) {
          failures.push_back("headers");
          break;
        }
        if (c == std::string::npos) break;
        pos = c + 1;
      }
    }
    if (explicit_origin) {
      a.headers.push_back({"Access-Control-Allow-Origin", origin});
      a.headers.push_back({"Vary", "Origin"});
    } else {
      a.headers.push_back({"Access-Control-Allow-Origin", "*"});
    }
    a.headers.push_back({"Access-Control-Allow-Methods", join(methods)});
    a.headers.push_back({"Access-Control-Max-Age", "600"});
    if (all_headers && !request_headers.empty()) a.headers.push_back({"Access-Control-Allow-Headers", request_headers});
    else a.headers.push_back({"Access-Control-Allow-Headers", join(allow_headers_list)});
    if (p.credentials) a.headers.push_back({"Access-Control-Allow-Credentials", "true"});
    if (failures.empty()) {
      a.status = 200;
      a.body = "OK";
    } else {
      a.status = 400;
      a.body = "Disallowed CORS " + join(failures);
    }
    return a;
  }
  if (!origin_ok) return a;
  if (explicit_origin || (all_origins && cookie)) {
    a.headers.push_back({"Access-Control-Allow-Origin", origin});
    a.headers.push_back({"Vary", "Origin"});
  } else {
    a.headers.push_back({"Access-Control-Allow-Origin", "*"});
  }
  if (p.credentials) a.headers.push_back({"Access-Control-Allow-Credentials", "true"});
  return a;
}

}  // namespace qinfer::server
