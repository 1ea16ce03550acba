#include "conf/values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <optional>
#include <system_error>

namespace memshard::conf::detail {
namespace {

constexpr uint16_t kKetamaDefaultPort = 11211;  // twemproxy leaves it out of ring names
// sockaddr_un::sun_path holds 108 bytes including the terminating NUL.
constexpr size_t kMaxUnixPathBytes = 107;

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool has_space(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

// Empty when `host` can name a server; otherwise what was expected.
std::string check_host(std::string_view host) {
  if (host.empty()) return "expected a host name or IP address before the port";
  if (host.front() == '[') {
    return "expected an IPv6 address without brackets, as twemproxy reads them "
           "(e.g. ::1:11211): the port is what follows the last ':'";
  }
  if (has_space(host)) return "expected a host name without spaces";
  return {};
}

// A number with decimals or an exponent, as JSON writes one ("0.25",
// "1.0", "5e-1"; no sign), read to the nearest double, as mcrouter's JSON
// parser reads its weights.
std::optional<double> parse_decimal(std::string_view text) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > from;
  };
  if (!digits()) return std::nullopt;
  bool fractional = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return std::nullopt;
    fractional = true;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return std::nullopt;
    fractional = true;
  }
  if (!fractional || i != text.size()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string check_unix_path(std::string_view path) {
  if (path.size() > kMaxUnixPathBytes) {
    return "expected a unix socket path of at most " + std::to_string(kMaxUnixPathBytes) + " bytes";
  }
  return {};
}

// Days from 1970-01-01 to the given civil date (proleptic Gregorian), as
// in Howard Hinnant's days_from_civil: no time zone database involved.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

// `n` digits at `at` as a number; -1 when they are not all digits.
int64_t digits_at(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size() || !is_digits(s.substr(at, n))) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v * 10 + (s[at + i] - '0');
  return v;
}

// "YYYY-MM-DDTHH:MM:SS[.fff...](Z|+00:00|-00:00)" to ms since the epoch.
Parsed<int64_t> parse_rfc3339_utc(std::string_view t) {
  const auto fail = [] {
    return Parsed<int64_t>::fail(
        "expected unix seconds or an RFC 3339 time in UTC such as \"2026-01-01T00:00:00Z\"");
  };
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || t[13] != ':' || t[16] != ':') return fail();
  if (t[10] != 'T' && t[10] != 't' && t[10] != ' ') return fail();
  const int64_t year = digits_at(t, 0, 4), month = digits_at(t, 5, 2), day = digits_at(t, 8, 2);
  const int64_t hour = digits_at(t, 11, 2), minute = digits_at(t, 14, 2),
                second = digits_at(t, 17, 2);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60) {
    return fail();
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int64_t month_days = kDays[month - 1] + (month == 2 && leap(year) ? 1 : 0);
  if (day > month_days) return fail();
  size_t at = 19;
  int64_t ms = 0;
  if (at < t.size() && t[at] == '.') {
    size_t n = 0;
    int64_t scale = 100;
    for (++at; at < t.size() && t[at] >= '0' && t[at] <= '9'; ++at, ++n) {
      ms += (t[at] - '0') * scale;
      scale /= 10;
    }
    if (n == 0) return fail();
  }
  const std::string_view zone = t.substr(at);
  if (zone != "Z" && zone != "z" && zone != "+00:00" && zone != "-00:00") {
    if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
      return Parsed<int64_t>::fail(
          "expected the time in UTC (\"Z\" or \"+00:00\"): every instance must read the "
          "same moment");
    }
    return fail();
  }
  // A leap second (":60") is the second after ":59", as a unix time counts it.
  const int64_t seconds =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
      hour * 3600 + minute * 60 + second;
  return Parsed<int64_t>::ok(seconds * 1000 + ms);
}

}  // namespace

Parsed<int64_t> parse_switch_time(std::string_view text) {
  // Unix seconds up to the year 9999: a larger number is a typo.
  constexpr int64_t kMaxSeconds = 253402300799;
  if (is_digits(text)) {
    if (text.size() > 12 || digits_at(text, 0, text.size()) > kMaxSeconds ||
        digits_at(text, 0, text.size()) < 1) {
      return Parsed<int64_t>::fail("expected unix seconds from 1 to 253402300799 (the year 9999)");
    }
    return Parsed<int64_t>::ok(digits_at(text, 0, text.size()) * 1000);
  }
  return parse_rfc3339_utc(text);
}

Parsed<int> parse_number(std::string_view text) {
  constexpr std::string_view kExpected = "expected a whole number from 0 to 2147483647";
  if (!is_digits(text)) return Parsed<int>::fail(std::string(kExpected));
  long long v = 0;
  for (char c : text) {
    v = v * 10 + (c - '0');
    if (v > INT_MAX) return Parsed<int>::fail(std::string(kExpected));
  }
  return Parsed<int>::ok(static_cast<int>(v));
}

Parsed<bool> parse_bool(std::string_view text) {
  if (text == "true") return Parsed<bool>::ok(true);
  if (text == "false") return Parsed<bool>::ok(false);
  return Parsed<bool>::fail("expected true or false (nutcracker accepts no other spelling)");
}

Parsed<double> parse_share(std::string_view text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string digits(percent ? text.substr(0, text.size() - 1) : text);
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (percent) v /= 100;
  if (digits.empty() || end != digits.c_str() + digits.size() || !(v > 0 && v <= 1))
    return Parsed<double>::fail("expected a share such as 1% or 0.01, above 0 and at most 100%");
  return Parsed<double>::ok(v);
}

Parsed<uint16_t> parse_port(std::string_view text) {
  constexpr std::string_view kExpected = "expected a port from 1 to 65535 after the last ':'";
  if (!is_digits(text)) return Parsed<uint16_t>::fail(std::string(kExpected));
  if (text.size() > 1 && text.front() == '0') {
    return Parsed<uint16_t>::fail(
        "expected the port without leading zeros (twemproxy names servers by the port as "
        "written)");
  }
  const Parsed<int> n = parse_number(text);
  if (!n.value || *n.value < 1 || *n.value > 65535) {
    return Parsed<uint16_t>::fail(std::string(kExpected));
  }
  return Parsed<uint16_t>::ok(static_cast<uint16_t>(*n.value));
}

Parsed<ListenAddress> parse_listen(std::string_view text) {
  ListenAddress out;
  out.text = std::string(text);
  if (!text.empty() && text.front() == '/') {
    out.is_unix = true;
    const size_t space = text.rfind(' ');
    out.path = std::string(text.substr(0, space));
    if (space != std::string_view::npos) {
      // nutcracker reads the permissions with strtol(..., 8) and takes junk
      // as 0; only real octal modes are accepted here.
      const std::string_view perm = text.substr(space + 1);
      const bool octal =
          !perm.empty() && perm.size() <= 4 &&
          std::all_of(perm.begin(), perm.end(), [](char c) { return c >= '0' && c <= '7'; });
      const unsigned long mode = octal ? std::stoul(std::string(perm), nullptr, 8) : 01000;
      if (mode > 0777) {
        return Parsed<ListenAddress>::fail(
            "expected octal permissions from 0 to 0777 after the socket path (e.g. 0666)");
      }
      out.perm = static_cast<uint32_t>(mode);
    }
    if (std::string e = check_unix_path(out.path); !e.empty())
      return Parsed<ListenAddress>::fail(e);
    return Parsed<ListenAddress>::ok(std::move(out));
  }

  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Parsed<ListenAddress>::fail("expected \"host:port\" or \"/path/to.sock [permissions]\"");
  }
  if (std::string e = check_host(text.substr(0, colon)); !e.empty()) {
    return Parsed<ListenAddress>::fail(e);
  }
  const Parsed<uint16_t> port = parse_port(text.substr(colon + 1));
  if (!port.value) return Parsed<ListenAddress>::fail(port.error);
  out.host = std::string(text.substr(0, colon));
  out.port = *port.value;
  return Parsed<ListenAddress>::ok(std::move(out));
}

Parsed<ketama::ServerEntry> parse_server(std::string_view text) {
  using Result = Parsed<ketama::ServerEntry>;
  constexpr std::string_view kFormat =
      "expected \"host:port:weight [name]\" or \"/path/to.sock:weight [name]\" (the weight "
      "is required)";
  ketama::ServerEntry out;

  std::string_view rest = text;
  if (const size_t space = rest.rfind(' '); space != std::string_view::npos) {
    out.name = std::string(rest.substr(space + 1));
    rest = rest.substr(0, space);
    if (out.name.empty()) return Result::fail("expected a server name after the space");
  }

  const size_t weight_colon = rest.rfind(':');
  if (weight_colon == std::string_view::npos) return Result::fail(std::string(kFormat));
  const std::string_view weight_text = rest.substr(weight_colon + 1);
  // A whole number, or one with decimals ("0.5"), which only distribution
  // wch3 takes (as 0 does): the pool checks that (check_weight()).
  const Parsed<int> weight = parse_number(weight_text);
  if (weight.value) {
    out.weight = static_cast<uint32_t>(*weight.value);
    out.fraction = *weight.value;
  } else if (std::optional<double> fraction = parse_decimal(weight_text)) {
    out.weight = 0;
    out.fraction = *fraction;
  } else {
    return Result::fail("expected a whole number weight from 1 to 2147483647 after the last ':'");
  }
  const std::string_view address = rest.substr(0, weight_colon);

  if (!address.empty() && address.front() == '/') {
    // twemproxy finds the weight at the last ':' and then fails on any other
    // ':' in a socket path; say so instead of a generic format error.
    if (address.find(':') != std::string_view::npos) {
      return Result::fail("expected a unix socket path without ':' (twemproxy cannot read one)");
    }
    if (std::string e = check_unix_path(address); !e.empty()) return Result::fail(e);
    out.is_unix = true;
    out.host = std::string(address);
    out.port = 0;
    return Result::ok(std::move(out));
  }

  const size_t port_colon = address.rfind(':');
  if (port_colon == std::string_view::npos) return Result::fail(std::string(kFormat));
  if (std::string e = check_host(address.substr(0, port_colon)); !e.empty()) {
    return Result::fail(e);
  }
  const Parsed<uint16_t> port = parse_port(address.substr(port_colon + 1));
  if (!port.value) return Result::fail(port.error);
  out.host = std::string(address.substr(0, port_colon));
  out.port = *port.value;
  return Result::ok(std::move(out));
}

std::string check_weight(const ketama::ServerEntry& server, ketama::Distribution distribution) {
  if (distribution == ketama::Distribution::wch3) {
    if (server.fraction >= 0 && server.fraction <= 1) return {};
    return "expected a weight from 0 to 1 with distribution wch3 (mcrouter's WeightedCh3: the "
           "share of its keys a server keeps, such as 0.5)";
  }
  if (server.weight >= 1 && server.fraction == static_cast<double>(server.weight)) return {};
  if (server.fraction == 0) {
    return "expected a weight of at least 1 (twemproxy refuses a zero weight)";
  }
  return "expected a whole number weight from 1 to 2147483647 after the last ':' (a weight from "
         "0 to 1 such as 0.5 is distribution wch3's only)";
}

std::string twemproxy_ring_name(const ketama::ServerEntry& server) {
  if (!server.name.empty()) return server.name;
  if (server.is_unix) return server.host + ":";
  if (server.port == kKetamaDefaultPort) return server.host;
  return server.host + ":" + std::to_string(server.port);
}

std::string address_key(const ketama::ServerEntry& server) {
  if (server.is_unix) return server.host;
  std::string host = server.host;
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host + ":" + std::to_string(server.port);
}

}  // namespace memshard::conf::detail
