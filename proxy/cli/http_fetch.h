// A blocking HTTP GET with a deadline, for `memshard top`: what it needs
// of HTTP and nothing more (the stats port answers with Connection: close
// and a Content-Length).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace memshard::proxy {

struct FetchResult {
  bool ok = false;    // a whole 200 answer arrived
  int status = 0;     // the HTTP status, 0 when none arrived
  std::string body;   // of any status
  std::string error;  // why not ok, for the operator
};

// GET http://host:port/path, with `Authorization: Bearer token` when the
// token is not empty. The whole exchange takes at most `limit`; an answer
// over 64 MiB is refused.
FetchResult http_fetch(const std::string& host, uint16_t port, const std::string& path,
                       const std::string& token, std::chrono::milliseconds limit);

// "host:port", "[v6]:port", or "host" alone (port 22222). False when the
// port is not 1..65535.
bool split_host_port(const std::string& text, std::string& host, uint16_t& port);

}  // namespace memshard::proxy
