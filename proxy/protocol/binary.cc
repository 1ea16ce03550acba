#include "proxy/protocol/binary.h"

namespace memshard::proto::binary {
namespace {

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

}  // namespace

void append_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

void append_u64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

uint32_t read_u32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

uint64_t read_u64(const unsigned char* p) {
  return uint64_t{read_u32(p)} << 32 | read_u32(p + 4);
}

Header decode_header(const unsigned char* b) {
  Header h;
  h.magic = b[0];
  h.opcode = b[1];
  h.key_length = static_cast<uint16_t>(b[2] << 8 | b[3]);
  h.extras_length = b[4];
  h.data_type = b[5];
  h.vbucket_or_status = static_cast<uint16_t>(b[6] << 8 | b[7]);
  h.body_length = read_u32(b + 8);
  h.opaque = read_u32(b + 12);
  h.cas = read_u64(b + 16);
  return h;
}

std::string_view status_text(Status status) {
  // memcached 1.6.18's write_bin_error, byte for byte.
  switch (status) {
    case Status::out_of_memory:
      return "Out of memory";
    case Status::unknown_command:
      return "Unknown command";
    case Status::key_not_found:
      return "Not found";
    case Status::invalid_arguments:
      return "Invalid arguments";
    case Status::key_exists:
      return "Data exists for key.";
    case Status::too_large:
      return "Too large.";
    case Status::non_numeric:
      return "Non-numeric server-side value for incr or decr";
    case Status::not_stored:
      return "Not stored.";
    case Status::auth_error:
      return "Auth failure.";
    case Status::temporary_failure:
      return "Temporary failure";
    case Status::ok:
      break;
  }
  return "";
}

void append_response_header(std::string& out, uint8_t opcode, Status status, uint8_t extras_length,
                            uint16_t key_length, uint32_t body_length, uint32_t opaque,
                            uint64_t cas) {
  out.push_back(static_cast<char>(kResponseMagic));
  out.push_back(static_cast<char>(opcode));
  put_u16(out, key_length);
  out.push_back(static_cast<char>(extras_length));
  out.push_back(0);  // data type: raw bytes
  put_u16(out, static_cast<uint16_t>(status));
  append_u32(out, body_length);
  append_u32(out, opaque);
  append_u64(out, cas);
}

void append_error(std::string& out, uint8_t opcode, uint32_t opaque, Status status) {
  const std::string_view text = status_text(status);
  append_response_header(out, opcode, status, 0, 0, static_cast<uint32_t>(text.size()), opaque, 0);
  out.append(text);
}

uint8_t loud_opcode(uint8_t opcode) {
  switch (opcode) {
    case op::getq:
      return op::get;
    case op::getkq:
      return op::getk;
    case op::gatq:
      return op::gat;
    case op::gatkq:
      return op::gatk;
    case op::setq:
      return op::set;
    case op::addq:
      return op::add;
    case op::replaceq:
      return op::replace;
    case op::deleteq:
      return op::delete_;
    case op::incrementq:
      return op::increment;
    case op::decrementq:
      return op::decrement;
    case op::quitq:
      return op::quit;
    case op::flushq:
      return op::flush;
    case op::appendq:
      return op::append;
    case op::prependq:
      return op::prepend;
    default:
      return opcode;
  }
}

bool is_quiet(uint8_t opcode) {
  switch (opcode) {
    case op::getq:
    case op::getkq:
    case op::gatq:
    case op::gatkq:
    case op::setq:
    case op::addq:
    case op::replaceq:
    case op::deleteq:
    case op::incrementq:
    case op::decrementq:
    case op::quitq:
    case op::flushq:
    case op::appendq:
    case op::prependq:
      return true;
    default:
      return false;
  }
}

}  // namespace memshard::proto::binary
