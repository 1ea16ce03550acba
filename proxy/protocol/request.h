// A client request as a value: the command, what the proxy does with it,
// and what it asks of the server in protocol-neutral fields. Filled by the
// request parser (request_parser.h) and the meta parser (meta.h), read by
// everything that routes, encodes or answers a request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::proto {

inline constexpr size_t kMaxKeyLength = 250;

enum class Command : uint8_t {
  get,
  gets,
  gat,
  gats,
  set,
  add,
  replace,
  append,
  prepend,
  cas,
  delete_,
  incr,
  decr,
  touch,
  meta_get,         // mg
  meta_set,         // ms
  meta_delete,      // md
  meta_arithmetic,  // ma
  meta_debug,       // me
  meta_noop,        // mn
  version,
  verbosity,
  quit,
  stats,
  flush_all,
};

// What the proxy does with a request.
enum class Action : uint8_t {
  forward,    // one key: send the line as received (+ data) to the key's server
  multi_get,  // get/gets/gat/gats, even with one key: split per server, one
              // fragment per server holding keys (append_retrieval_line)
  broadcast,  // every server of the pool (flush_all)
  local,      // the proxy answers itself (version, verbosity, stats, mn, quit;
              // quit closes after the replies before it are written)
  error,      // answer `error_reply`, then discard `swallow` bytes of input.
              // Also the fixed answer "END\r\n" to "gat <exptime>" with no
              // key. `error_reply` is empty when memcached would suppress the
              // error (classic noreply).
  close,      // answer `error_reply` (may be empty) and close the connection:
              // an HTTP request line (`foreign`), and the binary protocol's
              // fatal frames; see also line_too_long
};

// What a storage or arithmetic request does to the item, whichever protocol
// named it: classic set/add/replace/append/prepend/cas and incr/decr, the
// `M` flag of meta ms and ma (ms without M is a set, ma without M an incr).
enum class Mode : uint8_t {
  none,  // not a storage or arithmetic request
  set,   // set, cas (a set with `cas` holding the compare value), ms MS
  add,   // ms ME
  replace,
  append,
  prepend,
  incr,     // ma MI / M+
  decr,     // ma MD / M-
  invalid,  // an M flag memcached refuses: the server answers the error
};

// The meta flags a request carries, by letter (the first byte of each flag
// token; memcached ignores the rest of an argument-less flag). A bitset, so
// the Request keeps every flag without allocating.
class MetaFlags {
 public:
  void add(char c) {
    if (const int i = index(c); i >= 0) bits_ |= uint64_t{1} << i;
  }
  bool has(char c) const {
    const int i = index(c);
    return i >= 0 && (bits_ >> i) & 1;
  }
  bool empty() const { return bits_ == 0; }
  void clear() { bits_ = 0; }

 private:
  static int index(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
  }
  uint64_t bits_ = 0;
};

struct Limits {
  uint32_t item_size_max = 1024 * 1024;  // largest value accepted (memcached -I)
};

// Reused between calls: clear() keeps the capacity, so parsing allocates
// nothing once a connection has seen its largest request.
struct Request {
  Command command{};
  Action action{};
  // Meaningful unless the line names no known command (error "ERROR").
  // "bget" (an old alias memcached still answers) parses as get.
  // Views into the parsed line. For meta commands with the `b` flag, `keys`
  // holds the *decoded* key (in `decoded_key`), which is what routing hashes.
  // (So a copied Request still points into the original's decoded_key.)
  std::vector<std::string_view> keys;
  std::string decoded_key;
  // For action == local: the tokens after the command word ("stats items"
  // gives {"items"}; verbosity's level is args[0], already validated).
  std::vector<std::string_view> args;
  // gat/gats: the exptime token, repeated in every fragment.
  std::string_view exptime;
  // Bytes that follow the line: value + "\r\n" (storage and ms), else 0.
  uint64_t data_bytes = 0;
  // The client asked not to see (some) replies: classic `noreply`, or the
  // meta `q` flag. The proxy sends the request unchanged followed by `mn`,
  // so the server applies its own quiet rules and the reply always ends
  // with "MN\r\n", which the proxy strips.
  // Classic noreply is memcached's rule: the last token is "noreply", for
  // storage commands, incr, decr, touch, delete (with 3+ tokens),
  // verbosity and flush_all; set even when the line is then refused, as
  // memcached then refuses silently. Meta: a flag token starting with 'q'
  // (memcached shows meta errors anyway, so error_reply is never empty).
  bool quiet = false;
  // For action == error/close: the whole reply, "\r\n" included.
  std::string_view error_reply;
  // For action == error: input bytes after the line to discard unread
  // (the value of a too-large set, as memcached swallows it).
  uint64_t swallow = 0;
  // For action == error: memcached also drops the key's current value (a
  // `set` or `ms` refused as too large must not leave stale data behind),
  // so the proxy deletes `keys[0]` on its server. `key_base64`: the key as
  // written in the line is base64 (`raw_key`), keys[0] is decoded.
  bool invalidate_key = false;
  // For action == close: the line is not memcached at all but another
  // protocol's (an HTTP request), which memcached closes without a word.
  bool foreign = false;
  bool key_base64 = false;
  std::string_view raw_key;

  // --- The operation, independent of the wire protocol ---------------------
  // What the request asks of the server, so that a request can be sent in
  // another protocol than the client's (meta_codec.h) or be built without a
  // text line at all (binary clients, copies for replicas). Today's text
  // path still forwards the line itself; these fields say the same thing
  // in numbers. They live in Request rather than in a separate Operation
  // because routes already carry a Request and the parser fills it in
  // place, reused without allocating: a second struct would be one more
  // copy per request, or two things to keep in step. Filled for every command where they apply
  // (zero or false elsewhere) and meaningful when action is forward, multi_get or broadcast.
  // Numbers are what memcached's own parser makes of the token (numbers.h: an exptime of 4294967297
  // is 1). A meta flag whose argument memcached would refuse leaves its field unset and sets
  // `unmodeled_flags`: the server answers that error, so the model must not
  // claim a value.
  Mode mode = Mode::none;
  // Client flags: <flags> of classic storage commands, meta F.
  uint32_t flags = 0;
  // The exptime as a number: classic storage/touch/gat <exptime>, the
  // flush_all delay, meta T. memcached reads both the same way (negative:
  // already expired, up to 30 days: relative, beyond: a unix time), so a
  // classic exptime travels as T unchanged. `has_exptime` tells T0 (make
  // the item permanent) from no T at all.
  int64_t exptime_value = 0;
  bool has_exptime = false;
  // cas <cas unique>, meta C: store/delete/arith only if the item's CAS
  // matches.
  uint64_t cas = 0;
  bool has_cas = false;
  // incr/decr <value>, ma D (memcached's default delta is 1).
  uint64_t delta = 1;
  // ma J: the value an ma with N creates on a miss (memcached's default 0).
  uint64_t initial = 0;
  // Meta N: create the item on a miss, with this TTL (N0: no expiry).
  int64_t vivify = 0;
  bool has_vivify = false;
  // Meta O's argument (without the 'O'), returned by the server in its
  // reply. A view into the line.
  std::string_view opaque;
  // Classic `noreply`: the client wants no reply at all, errors included
  // (memcached's noreply). `quiet` is set as well. A meta `q` sets only
  // `quiet`: the server then hides only its "nothing to say" codes (mg:
  // EN; ms, md, ma: HD) and still shows NS, NF, EX and errors.
  bool noreply = false;
  // Meta requests: every flag letter given, those with an argument (whose
  // value is in the fields above) included.
  MetaFlags meta_flags;
  // Meta requests: a flag the fields above cannot say again, so only the
  // line itself says what the server must see: a repeated flag, a flag
  // memcached 1.6.18 does not know (E, S, x... and non-letters), R (whose
  // argument has no field), or an argument memcached refuses. P and L are
  // hints for proxies that memcached ignores; they are dropped, not
  // unmodeled.
  bool unmodeled_flags = false;

  // Where the value is: data_bytes bytes follow the line, the value and
  // then "\r\n".
  uint64_t value_length() const { return data_bytes >= 2 ? data_bytes - 2 : 0; }

  void clear();
};

// The meta flags of memcached 1.6.18 a Request holds: those taking an
// argument kept in a field, and those without (in `meta_flags` only).
inline constexpr std::string_view kModeledMetaArgs = "TFCNJDMO";
inline constexpr std::string_view kModeledMetaBare = "bcfhklqstuvI";

}  // namespace memshard::proto
