#include "proxy/admin/http_request.h"

#include <algorithm>
#include <cctype>

namespace memshard::proxy {

namespace {

constexpr std::string_view kMethods[] = {"GET ",   "HEAD ",    "POST ",    "PUT ",  "DELETE ",
                                         "PATCH ", "OPTIONS ", "CONNECT ", "TRACE "};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A token of RFC 9110 (method and header names): visible ASCII but for
// separators.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || std::string_view("\"(),/:;<=>?@[\\]{}").find(c) != s.npos)
      return false;
  }
  return true;
}

bool parse_request_line(std::string_view line, HttpRequest& out) {
  const size_t sp1 = line.find(' ');
  if (sp1 == line.npos) return false;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == line.npos) return false;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || !version.starts_with("HTTP/1.")) return false;
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  out.method.assign(method);
  const size_t q = target.find('?');
  out.path.assign(target.substr(0, q));
  out.query.assign(q == target.npos ? std::string_view() : target.substr(q + 1));
  return true;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

HeadStatus parse_http_head(std::string_view bytes, size_t max_head, HttpRequest& out) {
  size_t end = bytes.find("\r\n\r\n");
  size_t body = end == bytes.npos ? end : end + 4;
  if (const size_t lf = bytes.find("\n\n"); lf != bytes.npos && (end == bytes.npos || lf < end)) {
    end = lf;
    body = lf + 2;
  }
  if (end == bytes.npos || body > max_head) {
    return bytes.size() >= max_head ? HeadStatus::too_large : HeadStatus::incomplete;
  }
  std::string_view head = bytes.substr(0, end);
  out = HttpRequest{};
  bool first = true;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == head.npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first) {
      if (!parse_request_line(line, out)) return HeadStatus::malformed;
      first = false;
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == line.npos || !is_token(line.substr(0, colon))) return HeadStatus::malformed;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    out.headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
  }
  return first ? HeadStatus::malformed : HeadStatus::complete;
}

LooksLike looks_like_http(std::string_view first_bytes) {
  bool could_be = false;
  for (std::string_view m : kMethods) {
    if (first_bytes.starts_with(m)) return LooksLike::http;
    if (m.starts_with(first_bytes)) could_be = true;
  }
  return could_be ? LooksLike::undecided : LooksLike::not_http;
}

}  // namespace memshard::proxy
