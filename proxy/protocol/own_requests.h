// The requests memshard sends on its own, not on a client's behalf: the
// delete that undoes a copy or clears a key's old server, the lookup of a
// moved key on its old server, the touch of a key's other copies, the
// probe and the listing a migration walks. Built here, from the request
// model (meta_codec.h), so that a key a text line cannot carry (a space, a
// control byte: binary clients send such keys) travels base64 with `b`
// like every other request, and never as two tokens.
//
// Each appends one whole request, "\r\n" included, to `out` and returns
// false (with `out` unchanged) when the key has no meta form: more than 250
// bytes, or more than 186 when it needs base64.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memshard::proto {

// md <key> [b] [q]: drops the key.
[[nodiscard]] bool append_delete(std::string_view key, bool quiet, std::string& out);
// md <key> [b] [q] C<cas>: drops the key only while it still holds the
// item of that CAS (one memshard stored), never a value written over it.
[[nodiscard]] bool append_delete_if(std::string_view key, uint64_t cas, bool quiet,
                                    std::string& out);

// mg <key> [b] v f t [c] [T<exptime>]: the value with its flags and
// remaining TTL (what a copy needs), the cas when `with_cas`, touching it
// when `touch` is not null.
[[nodiscard]] bool append_lookup(std::string_view key, bool with_cas, const int64_t* touch,
                                 std::string& out);

// mg <key> [b] T<exptime> q: memcached's touch, silent when it hits.
[[nodiscard]] bool append_touch(std::string_view key, int64_t exptime, std::string& out);

// ms <key> <bytes> [b] T<exptime> ME (cas 0: only if the key is absent),
// or ... C<cas> (only while it still holds that CAS): a value that at most
// one of several writers racing for it stores, as a fleet's walk lease is.
[[nodiscard]] bool append_store_once(std::string_view key, std::string_view value, int64_t exptime,
                                     uint64_t cas, std::string& out);

// mn: marks the end of the replies to quiet requests before it.
inline constexpr std::string_view kNoop = "mn\r\n";
void append_noop(std::string& out);

// version: the health probe's question, answered by any live server.
void append_version(std::string& out);

// lru_crawler metadump all: every key a server holds, one line each.
void append_metadump(std::string& out);

}  // namespace memshard::proto
