// The backend codec: a Request written as memcached meta commands.
//
// For requests that do not travel as the client's own line: binary-protocol
// clients, copies written to replicas, read repair. (A text or meta client's
// request is still forwarded as written, zero copy.) Everything comes from
// the protocol-neutral fields of Request (request_parser.h), never from the
// client's line, so a Request built by hand encodes the same way.
//
// Mappings, and how the caller turns the server's reply (memcached 1.6.18)
// back into the client's. In every reply mapping, CLIENT_ERROR and
// SERVER_ERROR lines pass through as they are: the meta commands' error
// texts for these operations are the classic ones ("CLIENT_ERROR cannot
// increment or decrement non-numeric value", "SERVER_ERROR out of memory
// storing object"...).
//
//   get/gets/gat/gats, per key (so a multi-get becomes one mg per key,
//   replies in key order):
//     mg <key> v f t [c] [T<exptime>]          (c: gets/gats; T: gat/gats)
//     VA <len> f<flags> t<ttl> [c<cas>] + data -> VALUE <key> <flags> <len> [<cas>] + data
//     EN                                       -> nothing
//     and the caller ends the whole reply with END. `t` is not needed for
//     the classic reply: it is asked so that read repair can copy a value
//     with its remaining TTL (t-1: none) from the same reply. (With T,
//     memcached 1.6.18 reports the TTL from before the update.)
//   set/add/replace/append/prepend/cas:
//     ms <key> <len> [F<flags>] [T<exptime>] [C<cas>] [M<mode>] + value
//     (mode letters E R A P; set, the default, has none; F0 and T0 are
//     memcached's defaults and left out; cas is a set with C)
//     HD -> STORED, NS -> NOT_STORED, EX -> EXISTS, NF -> NOT_FOUND
//   delete:
//     md <key>                   HD -> DELETED, NF -> NOT_FOUND
//   incr/decr:
//     ma <key> v [MD] D<delta>   VA <n> + "<digits>" -> "<digits>", NF -> NOT_FOUND
//     (incr is ma's default mode; `v` is left out under noreply)
//   touch:
//     mg <key> T<exptime>        HD -> TOUCHED, EN -> NOT_FOUND
//     (mg with T and no v is memcached's own touch: it updates the TTL of
//     a hit and returns no value; T0 makes the item permanent, as touch 0)
//   mg ms md ma (a meta request from the model, e.g. a copy for a replica):
//     the same command with every flag the model holds: b, the other
//     argument-less flags (c f h k l s t u v I, in that order), then O T N
//     F C J D M from the fields, each when given or not the default (so a
//     Request built by hand needs no meta_flags), q last. P and L, hints
//     memcached ignores, are dropped. The reply is the server's; only the order of
//     its return flags may differ from the client's, since they come back
//     in the order of the request's flags.
//   me <key> [b], mn: as such; the reply is the server's.
//
// Noreply and quiet. Classic noreply and meta q both travel as `q`, which
// hides only the "nothing to say" codes (mg: EN; ms, md, ma: HD). As the
// proxy does for forwarded quiet requests, the caller sends `mn` after the
// request so that the reply always ends with MN; for a classic noreply
// request it drops every reply line before the MN, since noreply hides
// NOT_STORED, NOT_FOUND and errors too.
//
// Keys. A key travels as it is when its bytes are all printable ASCII
// (0x21..0x7e); any other byte (space, control, >= 0x7f) would split or end
// the line, so such a key travels base64 with `b`, as does a key the
// client itself sent with `b` (so that a `k` flag returns it the way the
// client wrote it). memcached checks the 250-byte key limit on the token
// as written, before decoding (1.6.18 answers "CLIENT_ERROR bad command line
// format" to the 252-byte token of a 187-byte key): a key that needs
// base64 must be at most 186 bytes (248 characters). Longer ones cannot
// be sent in meta at all, and the encoder refuses them.
//
// The opaque. Classic and binary requests have none in the model (a binary
// client's opaque is a number in its binary header, kept by the caller). A
// meta request's O is sent: the server then judges it as it judges the
// client's own line (1.6.18 refuses an opaque of more than 31 bytes) and
// echoes it in its reply, which thus needs no rewriting. The proxy itself
// never needs it: replies come back in request order.
#pragma once

#include <string>
#include <string_view>

#include "proxy/protocol/reply_status.h"
#include "proxy/protocol/request_parser.h"

namespace memshard::proto {

// Appends `r` as meta commands to `out` (for ms, the line, `value` and
// "\r\n"; `value` is the value without its "\r\n", ignored by the other
// commands). False, with `out` unchanged, when `r` has no meta form: a
// command the proxy answers itself or broadcasts, a meta request with
// `unmodeled_flags` (forward its line instead), a key of more than 250
// bytes, or one that needs base64 and is longer than 186 bytes.
// Allocates nothing once `out` has the capacity.
[[nodiscard]] bool append_meta_request(const Request& r, std::string_view value, std::string& out);

// The classic reply to a storage command whose meta form got `status` (HD
// -> STORED, NS -> NOT_STORED, EX -> EXISTS, NF -> NOT_FOUND); empty for
// any other status (errors pass through as they are).
std::string_view classic_storage_reply(ReplyStatus status);

// Whether `key` can be written in a meta command as it is (no `b`).
bool meta_key_is_plain(std::string_view key);

}  // namespace memshard::proto
