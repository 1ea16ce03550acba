// Parsing of the meta commands: mg ms md ma me.
//
// A meta request is forwarded unchanged, so the server judges its flags.
// The proxy checks only what it needs to route and frame the request (key
// length, the base64 key of the `b` flag, the data length of ms) and, when
// it must answer itself, gives the reply memcached 1.6.18 gives: for that
// it replays memcached's flag pre-parse, whose errors depend on the order
// and kind of every flag.
#pragma once

#include "proxy/protocol/request.h"
#include "proxy/protocol/tokens.h"

namespace memshard::proto {

// `out.command` is one of the meta commands except meta_noop; fills the rest.
void parse_meta_request(const LineTokens& tokens, const Limits& limits, Request& out);

}  // namespace memshard::proto
