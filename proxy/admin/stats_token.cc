#include "proxy/admin/stats_token.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "proxy/protocol/base64.h"

namespace memshard::proxy {

namespace {
constexpr size_t kMaxToken = 4096;

// The credentials of an Authorization header, after its scheme (matched
// without regard to case, as RFC 9110 says).
bool scheme_is(std::string_view header, std::string_view scheme, std::string_view& rest) {
  if (header.size() <= scheme.size() || header[scheme.size()] != ' ') return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if ((header[i] | 0x20) != (scheme[i] | 0x20)) return false;
  }
  rest = header.substr(scheme.size() + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return true;
}
}  // namespace

bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool authorization_carries(std::string_view header, std::string_view token) {
  if (token.empty()) return false;
  std::string_view credentials;
  if (scheme_is(header, "Bearer", credentials)) return same_secret(credentials, token);
  if (!scheme_is(header, "Basic", credentials) || credentials.size() > 2 * kMaxToken) return false;
  std::string user_password;
  if (!proto::memcached_base64_decode(credentials, user_password)) return false;
  const size_t colon = user_password.find(':');
  return colon != std::string::npos &&
         same_secret(std::string_view(user_password).substr(colon + 1), token);
}

bool read_stats_token(const std::string& path, std::string& token, std::string& error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot read stats token file '" + path + "': " + strerror(errno);
    return false;
  }
  std::string text;
  text.resize(kMaxToken + 2);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.ends_with('\n')) text.pop_back();
  if (text.ends_with('\r')) text.pop_back();
  if (text.empty() || text.size() > kMaxToken) {
    error = "stats token file '" + path + "' must hold one token of 1 to 4096 bytes";
    return false;
  }
  for (char c : text) {
    if (c <= 0x20 || c >= 0x7f) {
      error = "stats token file '" + path + "': the token must be visible ASCII, one line";
      return false;
    }
  }
  token = std::move(text);
  return true;
}

}  // namespace memshard::proxy
