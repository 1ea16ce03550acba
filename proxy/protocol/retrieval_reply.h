// Reading a retrieval's reply back, for routes that take a server's answer
// apart before the client sees it (replicated reads, reload warm-up): the
// classic blocks of a get and the meta VA of an mg, with what it takes to
// turn one into the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/meta_codec.h"

namespace memshard::proto {

// One "VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n" of a classic reply.
struct ValueBlock {
  std::string_view key;
  std::string_view block;  // the whole block, line to data terminator
};

// The blocks of a whole classic retrieval reply, in order, and whether it
// ended with END as a well-formed one does. nullopt: not a retrieval
// reply (an error line, a truncated block).
std::optional<std::vector<ValueBlock>> parse_value_blocks(std::string_view reply);

// An mg hit: "VA <len> <flags...>\r\n<data>\r\n" with f, t and c as asked.
struct MetaValue {
  std::string_view flags = "0";  // client flags, as the server wrote them
  std::string_view ttl;          // remaining seconds, "-1" for none, empty if not asked
  std::string_view cas;          // empty if not asked
  std::string_view data;
};
std::optional<MetaValue> parse_meta_value(std::string_view reply);

// The classic block an mg hit stands for (with the cas for gets/gats).
std::string classic_block(std::string_view key, const MetaValue& v, bool with_cas);

// Appends the request that copies an mg hit to another server: `ms` in add
// mode (a value written there meanwhile wins), with the hit's flags and
// remaining TTL, `q` when `quiet`, and `c`: a stored copy's answer carries
// its CAS (copied_cas), so that undoing the copy can spare a value written
// over it since. False when the key has no meta form.
[[nodiscard]] bool append_copy_request(std::string_view key, const MetaValue& v, bool quiet,
                                       std::string& out);

// The same with the copy's expiry given (`exptime`, as a request's: 0
// never, negative already expired) instead of the hit's remaining TTL: a
// warm-up from another pool (warm_from) copies with the route's warm_ttl.
[[nodiscard]] bool append_copy_request(std::string_view key, const MetaValue& v, int64_t exptime,
                                       bool quiet, std::string& out);

// Matches a classic reply's blocks (hits only, in key order) to the
// positions of the request's `keys`: the block of key i, or empty for a
// miss.
std::vector<std::string_view> blocks_by_key(const std::vector<ValueBlock>& blocks,
                                            const std::vector<std::string_view>& keys);

// A classic retrieval's command without its keys: "get", "gets",
// "gat <exptime>" or "gats <exptime>" (anything else: "get").
std::string retrieval_command(const Request& r);

// The CAS in a copy's answer ("HD c<cas>"), nullopt when it has none.
std::optional<uint64_t> copied_cas(std::string_view reply);

}  // namespace memshard::proto
