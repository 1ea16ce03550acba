// Helpers for the binary-protocol integration tests: request frames built
// byte by byte and response frames read back (the tests' own code, not the
// proxy's codec, so a codec bug cannot hide itself), and the two targets
// every test runs against: a lone memcached (the reference: what a binary
// client gets from memcached 1.6.18) and memshard in front of three
// memcached servers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace memshard::testing::bin {

inline constexpr uint8_t kRequest = 0x80;
inline constexpr uint8_t kResponse = 0x81;

// Opcodes (memcached's protocol_binary.h), spelled out for the tests.
enum Op : uint8_t {
  kGet = 0x00,
  kSet = 0x01,
  kAdd = 0x02,
  kReplace = 0x03,
  kDelete = 0x04,
  kIncrement = 0x05,
  kDecrement = 0x06,
  kQuit = 0x07,
  kFlush = 0x08,
  kGetQ = 0x09,
  kNoop = 0x0a,
  kVersion = 0x0b,
  kGetK = 0x0c,
  kGetKQ = 0x0d,
  kAppend = 0x0e,
  kPrepend = 0x0f,
  kStat = 0x10,
  kSetQ = 0x11,
  kAddQ = 0x12,
  kReplaceQ = 0x13,
  kDeleteQ = 0x14,
  kIncrementQ = 0x15,
  kDecrementQ = 0x16,
  kQuitQ = 0x17,
  kFlushQ = 0x18,
  kAppendQ = 0x19,
  kPrependQ = 0x1a,
  kVerbosity = 0x1b,
  kTouch = 0x1c,
  kGat = 0x1d,
  kGatQ = 0x1e,
  kSaslListMechs = 0x20,
  kSaslAuth = 0x21,
  kSaslStep = 0x22,
  kGatK = 0x23,
  kGatKQ = 0x24,
};

enum Status : uint16_t {
  kOk = 0x0000,
  kKeyNotFound = 0x0001,
  kKeyExists = 0x0002,
  kTooLarge = 0x0003,
  kInvalidArguments = 0x0004,
  kNotStored = 0x0005,
  kNonNumeric = 0x0006,
  kUnknownCommand = 0x0081,
};

std::string be16(uint16_t v);
std::string be32(uint32_t v);
std::string be64(uint64_t v);
uint64_t read_be(std::string_view bytes);  // up to 8 bytes, big-endian

// One frame as it is on the wire. For a request, `status` is the vbucket.
struct Frame {
  uint8_t magic = kRequest;
  uint8_t opcode = 0;
  uint8_t data_type = 0;
  uint16_t status = 0;
  uint32_t opaque = 0;
  uint64_t cas = 0;
  std::string extras, key, value;
  // Header fields as sent or received; when building, nullopt means "what
  // the parts add up to" (set them to make a malformed frame).
  std::optional<uint16_t> key_length;
  std::optional<uint8_t> extras_length;
  std::optional<uint32_t> body_length;

  std::string bytes() const;
  uint32_t flags() const { return static_cast<uint32_t>(read_be(extras)); }
};

// A request frame with these parts.
std::string request(uint8_t opcode, std::string_view key = {}, std::string_view extras = {},
                    std::string_view value = {}, uint32_t opaque = 0, uint64_t cas = 0);
// set/add/replace extras; incr/decr extras; touch/gat extras.
std::string store_extras(uint32_t flags, uint32_t exptime);
std::string arith_extras(uint64_t delta, uint64_t initial, uint32_t exptime);
std::string touch_extras(uint32_t exptime);

// Splits `bytes` into whole frames; what is left (a partial frame) goes to
// `rest`.
std::vector<Frame> parse_frames(std::string_view bytes, std::string* rest = nullptr);
// One line per frame, for failure messages.
std::string describe(const Frame& f);
std::string describe(const std::vector<Frame>& frames);

// Reads `n` whole response frames (fewer when time runs out or the peer
// closes); every wait bounded by `limit` in all.
std::vector<Frame> read_frames(RawClient& c, size_t n,
                               std::chrono::milliseconds limit = std::chrono::seconds(3));
std::optional<Frame> read_frame(RawClient& c,
                                std::chrono::milliseconds limit = std::chrono::seconds(3));
// Reads frames until one for which `last` is true arrives (included), or
// time runs out.
std::vector<Frame> read_frames_until(RawClient& c, const std::function<bool(const Frame&)>& last,
                                     std::chrono::milliseconds limit = std::chrono::seconds(3));
// Until a frame with this opcode.
std::vector<Frame> read_frames_until(RawClient& c, uint8_t opcode,
                                     std::chrono::milliseconds limit = std::chrono::seconds(3));

// What a memcached server holds for a key, read directly with a binary get
// (any key bytes; meta's base64 keys are limited to 250 encoded bytes).
struct Held {
  std::string value;
  uint32_t flags = 0;
  uint64_t cas = 0;
};
std::optional<Held> held(uint16_t server_port, std::string_view key);

enum class Kind { memcached, memshard };
std::string kind_name(Kind k);

// Where a test's client connects, and the memcached servers behind it: for
// Kind::memcached one server that the client talks to directly, for
// Kind::memshard memshard in front of three.
class Target {
 public:
  explicit Target(Kind kind, std::vector<std::string> memcached_args = {});
  ~Target();
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  Kind kind() const { return kind_; }
  uint16_t port() const { return port_; }
  size_t backends() const;
  uint16_t backend_port(size_t i);
  // Index of the backend the ring gives `key` (0 for a lone memcached).
  // Keys must hold no '\n' and not end in '\r'.
  std::vector<size_t> owners(const std::vector<std::string>& keys);
  size_t owner(const std::string& key) { return owners({key}).at(0); }
  // `per_backend` keys owned by each backend, made from `prefix`.
  std::vector<std::vector<std::string>> keys_by_backend(size_t per_backend,
                                                        const std::string& prefix);
  // The backends that hold `key` (read directly).
  std::vector<size_t> holders(std::string_view key);
  // memshard's log (empty for memcached), its tail when long.
  std::string log_tail(size_t max = 4000) const;
  // Stops memshard and returns whether it exited cleanly with no sanitizer
  // report (true for memcached); `why` says what went wrong.
  bool stop(std::string* why);

 private:
  Kind kind_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<Memcached> lone_;
  std::unique_ptr<Fleet> fleet_;
  std::unique_ptr<Memshard> memshard_;
  std::string config_, log_;
  uint16_t port_ = 0;
};

}  // namespace memshard::testing::bin
