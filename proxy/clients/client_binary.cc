// A binary-protocol client's side of ClientConn: frames read and
// translated into the requests a text client would send (binary_request.h),
// and what each one is owed, for binary_reply.h to encode its answer.
#include <event2/buffer.h>

#include <string_view>

#include "proxy/clients/client_conn.h"
#include "proxy/protocol/binary_reply.h"

namespace memshard::proxy {

ClientConn::Binary::Binary() : request(evbuffer_new()) {}

// Records how the slot about to be made is answered, in a queue slot whose
// key string keeps its room from earlier requests.
void ClientConn::owe(const proto::binary::ReplyContext& context, bool raw) {
  Binary::Owed& o = binary_->owed.push_back_slot();
  o.context.opcode = context.opcode;
  o.context.opaque = context.opaque;
  o.context.key.assign(context.key);
  o.context.fixed = context.fixed;
  o.raw = raw;
}
ClientConn::Binary::~Binary() {
  evbuffer_free(request);
}

bool ClientConn::next_binary_request() {
  namespace bin = proto::binary;
  evbuffer* in = stream_.input();
  Binary& b = *binary_;
  const size_t available = evbuffer_get_length(in);
  if (available < bin::kHeaderSize) return false;
  unsigned char raw[bin::kHeaderSize];
  evbuffer_copyout(in, raw, sizeof raw);
  const bin::Header h = bin::decode_header(raw);
  if (h.magic != bin::kRequestMagic) {
    // memcached closes without a word. The replies owed are still written.
    closing_ = true;
    stream_.set_reading(false);
    return false;
  }
  // memcached waits for the extras and the key before it judges a frame;
  // both are bounded by their length fields (at most 255 + 65535 bytes).
  const size_t head = bin::kHeaderSize + h.extras_length + h.key_length;
  if (available < head) return false;
  b.frame.resize(head);
  evbuffer_copyout(in, b.frame.data(), head);
  const std::string_view frame(b.frame);
  bin::Translation& t = b.translation;
  // Translated again if the value is still arriving: it is cheap, and
  // keeps no half-handled request across calls.
  bin::translate(h, frame.substr(bin::kHeaderSize, h.extras_length),
                 frame.substr(bin::kHeaderSize + h.extras_length), limits_, t);
  switch (t.kind) {
    case bin::Translation::Kind::close:  // not reached: the magic was checked
      closing_ = true;
      stream_.set_reading(false);
      return false;
    case bin::Translation::Kind::answer: {
      context_.stats().binary_requests.add();
      evbuffer_drain(in, head);
      swallow_left_ = t.swallow;
      context_.stats().client_errors.add();
      owe(t.context, true);
      work_.request.keys.clear();  // new_slot() weighs the slot by its keys
      ReplySlot* s = new_slot();
      reply_now(s, t.reply);
      if (t.close_after) {
        s->set_close_after();
        closing_ = true;
      }
      return true;
    }
    case bin::Translation::Kind::text:
      break;
  }
  if (available < head + t.value_length) return false;
  context_.stats().binary_requests.add();  // once whole: it may be translated again until then
  evbuffer_drain(in, head);
  evbuffer_add(b.request, t.line.data(), t.line.size());
  if (t.value_length > 0 || t.line.starts_with("ms ")) {
    evbuffer_remove_buffer(in, b.request, t.value_length);
    evbuffer_add(b.request, "\r\n", 2);
  }
  header_bytes_ = t.line.size();
  work_.line.assign(t.line, 0, t.line.size() - 2);
  proto::parse_request_line(work_.line, limits_, work_.request);
  owe(t.context, false);
  dispatch(b.request);
  // The request was made here, so nothing of it may stay behind, and what
  // the text path would swallow of the input is the frame's to say.
  evbuffer_drain(b.request, evbuffer_get_length(b.request));
  swallow_left_ = t.swallow;
  return true;
}

}  // namespace memshard::proxy
