#include "protocol_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <sstream>

#include "binary_util.h"
#include "failure_util.h"

namespace memshard::testing::failures {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kServerError = "SERVER_ERROR ";

std::string hex(std::string_view bytes) {
  std::string out;
  char b[3];
  for (unsigned char c : bytes) {
    std::snprintf(b, sizeof(b), "%02x", c);
    out += b;
  }
  return out;
}

// A binary frame as one line, without its cas.
std::string frame_line(const bin::Frame& f) {
  char head[64];
  std::snprintf(head, sizeof(head), "op=0x%02x status=0x%04x opaque=%u", f.opcode, f.status,
                f.opaque);
  std::string out = head;
  if (f.magic != bin::kResponse) out += " magic=0x" + hex(std::string(1, char(f.magic)));
  if (!f.extras.empty()) out += " extras=" + hex(f.extras);
  if (!f.key.empty()) out += " key=" + printable(f.key);
  if (!f.value.empty()) out += " value=" + printable(f.value);
  return out;
}

std::string response(const Ask& a, uint16_t status, std::string_view extras = {},
                     std::string_view key = {}, std::string_view value = {}) {
  bin::Frame f;
  f.magic = bin::kResponse;
  f.opcode = a.form->opcode;
  f.status = status;
  f.opaque = a.tag;
  f.extras = extras;
  f.key = key;
  f.value = value;
  return frame_line(f);
}

std::string meta_tag(const Ask& a) {
  return " O" + std::to_string(a.tag);
}

const std::vector<Form> kText = {
    {Protocol::text, "get", Verb::read},
    {Protocol::text, "set", Verb::store},
    {Protocol::text, "delete", Verb::remove},
    {Protocol::text, "incr", Verb::incr},
};
const std::vector<Form> kMeta = {
    {Protocol::meta, "mg", Verb::read},   {Protocol::meta, "mg q", Verb::read, true},
    {Protocol::meta, "ms", Verb::store},  {Protocol::meta, "ms q", Verb::store, true},
    {Protocol::meta, "md", Verb::remove}, {Protocol::meta, "md q", Verb::remove, true},
    {Protocol::meta, "ma", Verb::incr},   {Protocol::meta, "ma q", Verb::incr, true},
};
const std::vector<Form> kBinary = {
    {Protocol::binary, "get", Verb::read, false, false, bin::kGet},
    {Protocol::binary, "getk", Verb::read, false, true, bin::kGetK},
    {Protocol::binary, "getq", Verb::read, true, false, bin::kGetQ},
    {Protocol::binary, "getkq", Verb::read, true, true, bin::kGetKQ},
    {Protocol::binary, "set", Verb::store, false, false, bin::kSet},
    {Protocol::binary, "setq", Verb::store, true, false, bin::kSetQ},
    {Protocol::binary, "delete", Verb::remove, false, false, bin::kDelete},
    {Protocol::binary, "incr", Verb::incr, false, false, bin::kIncrement},
};

}  // namespace

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::text:
      return "text";
    case Protocol::meta:
      return "meta";
    case Protocol::binary:
      return "binary";
  }
  return "?";
}

const std::vector<Form>& forms(Protocol p) {
  return p == Protocol::text ? kText : p == Protocol::meta ? kMeta : kBinary;
}

const Form& read_form(Protocol p) {
  return p == Protocol::binary ? kBinary[1] : forms(p)[0];
}

const Form& store_form(Protocol p) {
  return p == Protocol::binary ? kBinary[4] : p == Protocol::meta ? kMeta[2] : kText[1];
}

std::string request(const Ask& a) {
  const Form& f = *a.form;
  switch (f.protocol) {
    case Protocol::text:
      switch (f.verb) {
        case Verb::read:
          return "get " + a.key + "\r\n";
        case Verb::store:
          return set_command(a.key, a.value);
        case Verb::remove:
          return "delete " + a.key + "\r\n";
        case Verb::incr:
          return "incr " + a.key + " 1\r\n";
      }
      break;
    case Protocol::meta: {
      const std::string q = f.quiet ? " q" : "";
      switch (f.verb) {
        case Verb::read:
          return "mg " + a.key + " v" + q + meta_tag(a) + "\r\n";
        case Verb::store:
          return "ms " + a.key + " " + std::to_string(a.value.size()) + q + meta_tag(a) + "\r\n" +
                 a.value + "\r\n";
        case Verb::remove:
          return "md " + a.key + q + meta_tag(a) + "\r\n";
        case Verb::incr:
          return "ma " + a.key + q + meta_tag(a) + "\r\n";
      }
      break;
    }
    case Protocol::binary:
      switch (f.verb) {
        case Verb::read:
        case Verb::remove:
          return bin::request(f.opcode, a.key, {}, {}, a.tag);
        case Verb::store:
          return bin::request(f.opcode, a.key, bin::store_extras(0, 0), a.value, a.tag);
        case Verb::incr:
          return bin::request(f.opcode, a.key, bin::arith_extras(1, 0, 0xffffffff), {}, a.tag);
      }
      break;
  }
  return {};
}

std::string end_of_batch(Protocol p, uint32_t tag) {
  switch (p) {
    case Protocol::text:
      return {};
    case Protocol::meta:
      return "mn\r\n";
    case Protocol::binary:
      return bin::request(bin::kNoop, {}, {}, {}, tag);
  }
  return {};
}

Replies hit(const Ask& a, std::string_view value, uint32_t flags) {
  const Form& f = *a.form;
  const std::string n = std::to_string(value.size());
  switch (f.protocol) {
    case Protocol::text:
      return {"VALUE " + a.key + " " + std::to_string(flags) + " " + n + "\r\n" +
              std::string(value) + "\r\nEND\r\n"};
    case Protocol::meta:  // mg ... v: the flags are not asked
      return {"VA " + n + meta_tag(a) + "\r\n" + std::string(value) + "\r\n"};
    case Protocol::binary:
      return {response(a, bin::kOk, bin::be32(flags), f.with_key ? a.key : "", value)};
  }
  return {};
}

Replies failed(const Ask& a, std::string_view line) {
  if (a.form->protocol != Protocol::binary) return {std::string(line) + "\r\n"};
  if (!line.starts_with(kServerError)) return {"(no binary status for " + printable(line) + ")"};
  const std::string_view message = line.substr(kServerError.size());
  if (message.starts_with("object too large")) return {response(a, 0x0003, {}, {}, "Too large.")};
  if (message.starts_with("out of memory") || message.starts_with("Out of memory"))
    return {response(a, 0x0082, {}, {}, "Out of memory")};
  return {response(a, 0x0086, {}, {}, message)};
}

Replies absent(const Ask& a) {
  const Form& f = *a.form;
  switch (f.protocol) {
    case Protocol::text:
      switch (f.verb) {
        case Verb::read:
          return {"END\r\n"};
        case Verb::store:
          return {"STORED\r\n"};
        default:
          return {"NOT_FOUND\r\n"};
      }
    case Protocol::meta:
      switch (f.verb) {
        case Verb::read:
          return f.quiet ? Replies{} : Replies{"EN" + meta_tag(a) + "\r\n"};
        case Verb::store:
          return f.quiet ? Replies{} : Replies{"HD" + meta_tag(a) + "\r\n"};
        default:  // q hides HD, not NF
          return {"NF" + meta_tag(a) + "\r\n"};
      }
    case Protocol::binary:
      switch (f.verb) {
        case Verb::read:
          if (f.quiet) return {};
          // proto_bin.c: getk's miss carries the key, get's the message.
          if (f.with_key) return {response(a, bin::kKeyNotFound, {}, a.key)};
          return {response(a, bin::kKeyNotFound, {}, {}, "Not found")};
        case Verb::store:
          return f.quiet ? Replies{} : Replies{response(a, bin::kOk)};
        default:
          return {response(a, bin::kKeyNotFound, {}, {}, "Not found")};
      }
  }
  return {};
}

Replies stored(const Ask& a) {
  switch (a.form->protocol) {
    case Protocol::text:
      return {"STORED\r\n"};
    case Protocol::meta:
      return a.form->quiet ? Replies{} : Replies{"HD" + meta_tag(a) + "\r\n"};
    case Protocol::binary:
      return a.form->quiet ? Replies{} : Replies{response(a, bin::kOk)};
  }
  return {};
}

Replies batch_end(Protocol p, uint32_t tag) {
  switch (p) {
    case Protocol::text:
      return {};
    case Protocol::meta:
      return {"MN\r\n"};
    case Protocol::binary: {
      static const Form noop{Protocol::binary, "noop", Verb::read, false, false, bin::kNoop};
      return {response(Ask{&noop, "", tag}, bin::kOk)};
    }
  }
  return {};
}

std::string show(const Replies& r) {
  std::string out;
  for (const std::string& s : r) out += "  " + printable(s) + "\n";
  return out.empty() ? "  (none)\n" : out;
}

// ------------------------------------------------------------------ client

// Text and meta: ReplyReader (VALUE blocks to END, VA and its data, a
// line). Binary: whole frames.
struct ProtocolClient::Reader {
  explicit Reader(RawClient& c) : text(c) {}
  ReplyReader text;
  std::string frames;  // binary bytes not yet a whole frame
};

ProtocolClient::ProtocolClient(Protocol p, uint16_t port)
    : protocol_(p),
      raw_(std::make_unique<RawClient>(port)),
      reader_(std::make_unique<Reader>(*raw_)) {}

ProtocolClient::~ProtocolClient() = default;

void ProtocolClient::send(std::string_view bytes) {
  raw_->send(bytes);
}

std::string ProtocolClient::next(std::chrono::milliseconds limit) {
  if (protocol_ != Protocol::binary) return reader_->text.next(limit);
  const auto deadline = Clock::now() + limit;
  std::string& buf = reader_->frames;
  while (true) {
    std::string rest;
    std::vector<bin::Frame> got = bin::parse_frames(buf, &rest);
    if (!got.empty()) {
      // One frame taken; the bytes after it stay.
      buf.erase(0, 24 + size_t(*got.front().body_length));
      return frame_line(got.front());
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return {};
    pollfd p{raw_->fd(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    const ssize_t n = recv(raw_->fd(), chunk, sizeof(chunk), 0);
    if (n <= 0) return {};
    buf.append(chunk, static_cast<size_t>(n));
  }
}

Replies ProtocolClient::read(size_t n, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  Replies out;
  while (out.size() < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::string r = next(std::max(left, std::chrono::milliseconds(1)));
    if (r.empty()) break;
    out.push_back(std::move(r));
  }
  return out;
}

std::string ProtocolClient::pending() const {
  return protocol_ == Protocol::binary ? reader_->frames : reader_->text.pending();
}

}  // namespace memshard::testing::failures
