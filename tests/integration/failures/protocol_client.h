// One failure test, three client protocols: the requests a test makes of a
// key, written in the text, meta or binary protocol, and what a client of
// that protocol gets back, as the bytes it reads (text, meta) or one line
// per binary frame. A test says "a read of k, a write of j, then the end of
// the batch" once, and checks the replies each protocol owes for it.
//
// What memshard answers each protocol for a server's failure:
//   text, meta   the SERVER_ERROR line (memshard's own, or the server's)
//   binary       a frame with the request's opcode and opaque: "temporary
//                failure" (0x0086) with the line's message as its body, or
//                "out of memory" / "too large" for the SERVER_ERRORs that
//                memcached's binary protocol has a status for
// (proxy/protocol/binary_reply.h). Binary frames are built and read with
// the binary tests' own helpers (tests/integration/binary/binary_util.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace memshard::testing::failures {

enum class Protocol : uint8_t { text, meta, binary };
std::string_view protocol_name(Protocol p);
// gtest names a parameter by it ("binary", not "1-byte object <02>").
inline void PrintTo(Protocol p, std::ostream* os) {
  *os << protocol_name(p);
}
inline constexpr Protocol kProtocols[] = {Protocol::text, Protocol::meta, Protocol::binary};

// What a request does to its key.
enum class Verb : uint8_t { read, store, remove, incr };

// One kind of request of one protocol.
struct Form {
  Protocol protocol;
  const char* name;  // as a client writes it: "get", "mg q", "getkq"
  Verb verb;
  bool quiet = false;     // meta q, a binary quiet opcode
  bool with_key = false;  // binary getk, getkq: the reply carries the key
  uint8_t opcode = 0;     // binary
};

// Every form the failure tests use, per protocol:
//   text    get set delete incr
//   meta    mg, ms, md, ma, each also with q
//   binary  get getk getq getkq set setq delete incr
const std::vector<Form>& forms(Protocol p);
// The protocol's plain read (text get, meta mg, binary getk) and store.
const Form& read_form(Protocol p);
const Form& store_form(Protocol p);

// One request: a form, its key, a tag that identifies its reply (meta's
// O flag, the binary opaque; unused by text), and for a store its value.
struct Ask {
  const Form* form;
  std::string key;
  uint32_t tag = 0;
  std::string value = "ok";
};

// The request's bytes. A store's value has flags 0 and no expiry; incr
// adds 1 (binary: to an existing number only, as exptime 0xffffffff asks).
std::string request(const Ask& a);
// What ends a pipelined batch and is answered after everything before it:
// meta mn, a binary noop (tagged), nothing for text.
std::string end_of_batch(Protocol p, uint32_t tag);

// The replies a client reads, each as one string: the reply's bytes for
// text and meta, a line describing the frame for binary (opcode, status,
// opaque, extras, key, value; not the cas, which no test can know).
using Replies = std::vector<std::string>;

// A read of `a`'s key that found `value` with `flags`.
Replies hit(const Ask& a, std::string_view value, uint32_t flags = 0);
// `a` failed with `line` ("SERVER_ERROR ...", no "\r\n"), the proxy's or
// the server's: shown even for a quiet request.
Replies failed(const Ask& a, std::string_view line);
// What memcached answers `a` when the key is not there (a miss, not found,
// a store done): nothing for a quiet request whose answer that hides.
Replies absent(const Ask& a);
// A store of `a` done (STORED, HD, the binary ok).
Replies stored(const Ask& a);
// The answer to end_of_batch().
Replies batch_end(Protocol p, uint32_t tag);

// A client connection of one protocol that reads whole replies.
class ProtocolClient {
 public:
  ProtocolClient(Protocol p, uint16_t port);
  ~ProtocolClient();
  ProtocolClient(const ProtocolClient&) = delete;
  ProtocolClient& operator=(const ProtocolClient&) = delete;

  Protocol protocol() const { return protocol_; }
  void send(std::string_view bytes);
  // The next whole reply; empty when none came within `limit` (or the
  // connection closed).
  std::string next(std::chrono::milliseconds limit = std::chrono::seconds(5));
  // `n` replies, every wait bounded by `limit` in all (fewer when time ran
  // out).
  Replies read(size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Bytes received beyond the whole replies read so far.
  std::string pending() const;

 private:
  struct Reader;
  Protocol protocol_;
  std::unique_ptr<RawClient> raw_;
  std::unique_ptr<Reader> reader_;
};

// Replies and expectations in failure messages: one per line, printable.
std::string show(const Replies& r);

// One batch's replies after another's.
inline Replies operator+(Replies a, const Replies& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace memshard::testing::failures
