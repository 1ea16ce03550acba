// Parsers for the scalar values of nutcracker.yml directives, kept apart
// from the YAML walk so each rule can be tested on plain strings.
//
// Every parser accepts what nutcracker 0.5 accepts, except where nutcracker
// silently accepts garbage that would misbehave later (overflowing numbers,
// non-octal permissions, empty or bracketed hosts); those are refused with a
// message that says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "conf/model.h"
#include "ketama/ring.h"

namespace memshard::conf::detail {

// A value parsed from one scalar, or the reason it could not be.
template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;  // what was expected; empty when value is set

  static Parsed ok(T v) { return {std::move(v), {}}; }
  static Parsed fail(std::string why) { return {std::nullopt, std::move(why)}; }
};

// Decimal digits only, 0..INT_MAX, as nutcracker's nc_atoi (which has no
// sign and no hex). Larger values are refused: nutcracker wraps them.
Parsed<int> parse_number(std::string_view text);

// Exactly "true" or "false": nutcracker refuses yes/no/True.
Parsed<bool> parse_bool(std::string_view text);

// A share of a whole: "10%" or the fraction 0.1, above 0 and at most 1.
Parsed<double> parse_share(std::string_view text);

// 1..65535, decimal, no leading zero (twemproxy hashes the port text as
// written, so "011212" would name the server differently on its ring).
Parsed<uint16_t> parse_port(std::string_view text);

// "host:port" split at the last ':' (so "::1:22122" is IPv6 ::1), or
// "/path/to.sock [octal perm]".
Parsed<ListenAddress> parse_listen(std::string_view text);

// "host:port:weight [name]" or "/path/to.sock:weight [name]", read from the
// right as twemproxy does: name after the last space, weight after the
// last ':', port after the ':' before it, and everything left is the host.
// The weight is a whole number, or one with decimals ("0.5": weight 0,
// ServerEntry::fraction 0.5); the pool decides which its distribution
// takes (check_weight()).
Parsed<ketama::ServerEntry> parse_server(std::string_view text);

// Empty when `server`'s weight suits `distribution`, else what was
// expected: a whole number of at least 1 (twemproxy's rule), or for wch3
// (mcrouter's WeightedCh3) a number from 0 to 1.
std::string check_weight(const ketama::ServerEntry& server, ketama::Distribution distribution);

// reload_switch_at: a moment as unix seconds ("1767225600") or an RFC 3339
// time in UTC ("2026-01-01T00:00:00Z", a fraction of a second and the
// offset "+00:00" allowed), as milliseconds since the epoch. Other offsets
// are refused: every instance of a fleet must read the same moment, and a
// local time zone is where they would differ.
Parsed<int64_t> parse_switch_time(std::string_view text);

// The name twemproxy 0.5 puts a server on its ring under, and checks for
// uniqueness within a pool: the explicit name; else the host alone when the
// port is 11211; else "host:port"; for an unnamed unix socket "path:".
std::string twemproxy_ring_name(const ketama::ServerEntry& server);

// The address a server is reached at, for spotting the same memcached listed
// twice: "host:port" with the host lower-cased (DNS names are
// case-insensitive), or the socket path.
std::string address_key(const ketama::ServerEntry& server);

}  // namespace memshard::conf::detail
