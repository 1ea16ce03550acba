// What a reply says, as one value: the text, meta and binary protocols
// each have their own words for "stored", "a miss" or "an error", and
// routes that choose between replies (failover, fan-out, warm-up) decide
// on this instead of on bytes. A reply is classified once, where it is
// read (the backend) or made (the proxy's own answers).
#pragma once

#include <cstdint>
#include <string_view>

namespace memshard::proto {

enum class ReplyStatus : uint8_t {
  none,          // nothing said yet, or nothing to say (a quiet success)
  hit,           // VALUE blocks, VA, a binary get's value
  miss,          // END alone, EN, a binary get's "not found"
  stored,        // STORED
  not_stored,    // NOT_STORED, NS
  exists,        // EXISTS, EX
  not_found,     // NOT_FOUND, NF
  deleted,       // DELETED
  touched,       // TOUCHED
  done,          // HD: a meta command did what it was asked (stored, deleted, touched...)
  number,        // incr/decr's new value
  ok,            // OK (flush_all, verbosity), MN
  version,       // VERSION ...
  server_error,  // SERVER_ERROR ..., the proxy's own failures included
  client_error,  // CLIENT_ERROR ...
  error,         // ERROR: an unknown command
  other,         // anything else (STAT lines, a line no server sends)
};

// The status of a reply from its first line (no "\r\n"), as a memcached
// server or the proxy writes it.
ReplyStatus classify_reply_line(std::string_view line);

// The status a binary response status code stands for (binary.h's Status;
// 0x0000 success is `done`, a get's value is known to the caller).
ReplyStatus classify_binary_status(uint16_t status);

// The request was carried out as asked: stored, deleted, touched, counted.
constexpr bool succeeded(ReplyStatus s) {
  return s == ReplyStatus::stored || s == ReplyStatus::deleted || s == ReplyStatus::touched ||
         s == ReplyStatus::done || s == ReplyStatus::number || s == ReplyStatus::ok;
}

// The server (or the proxy on its behalf) could not answer: the request may
// be tried elsewhere. A CLIENT_ERROR is the request's fault, not the server's.
constexpr bool failed(ReplyStatus s) {
  return s == ReplyStatus::server_error;
}

// A read found nothing.
constexpr bool missed(ReplyStatus s) {
  return s == ReplyStatus::miss;
}

std::string_view status_name(ReplyStatus s);

}  // namespace memshard::proto
