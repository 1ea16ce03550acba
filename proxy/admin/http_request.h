// The head of an HTTP/1.x request, as the stats port reads it: the request
// line and the headers it acts on. Pure: bytes in, a value out, so that
// every malformed or oversized head is a unit test, not a socket.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memshard::proxy {

struct HttpRequest {
  std::string method;  // as sent: GET, HEAD, POST, ...
  std::string path;    // without the query
  std::string query;   // after '?', without it
  // Names lower-cased, values without surrounding blanks, in the order sent.
  std::vector<std::pair<std::string, std::string>> headers;

  // The first header of that name (lower case), or "".
  std::string_view header(std::string_view lower_name) const;
};

enum class HeadStatus {
  incomplete,  // no blank line yet: read more
  complete,    // `out` holds the request
  too_large,   // no blank line within the bound: 431
  malformed,   // not a request line and headers: 400
};

// Parses the head at the start of `bytes` (ended by CRLF CRLF, or LF LF as
// lenient clients send it), reading at most `max_head` bytes of it.
HeadStatus parse_http_head(std::string_view bytes, size_t max_head, HttpRequest& out);

// Whether the first bytes a client sent start an HTTP request: a method
// name (GET, HEAD, POST, ...) then a space. Undecided while they are a
// part of one: more bytes tell.
enum class LooksLike { http, not_http, undecided };
LooksLike looks_like_http(std::string_view first_bytes);

}  // namespace memshard::proxy
