// GET /: the chat page, one self-contained HTML file (inline CSS and JavaScript, no CDN,
// no build step) kept as src/server/web/chat.html and embedded into the binary at build
// time (src/server/CMakeLists.txt writes it into a generated .cc as a raw string).
#pragma once
#include <string>

namespace qinfer::server {

const std::string& web_ui_page();

}  // namespace qinfer::server
