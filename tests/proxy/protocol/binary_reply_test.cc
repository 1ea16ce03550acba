// The binary reply made from a text reply (proxy/protocol/binary_reply.h):
// every meta code and error line to memcached 1.6.18's status for the same
// outcome, what quiet opcodes hide, getk keys, stats frames, and the exact
// bytes of a few whole frames.
#include "proxy/protocol/binary_reply.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "binary_test_util.h"

namespace memshard::proto::binary {
namespace {

using testing::Response;
using testing::split_responses;
using testing::u32;
using testing::u64;

ReplyContext context(uint8_t opcode, uint32_t opaque = 0x01020304, std::string key = "") {
  ReplyContext c;
  c.opcode = opcode;
  c.opaque = opaque;
  c.key = std::move(key);
  return c;
}

std::vector<Response> encode(const ReplyContext& c, std::string_view text) {
  std::string out;
  encode_reply(c, text, out);
  std::vector<Response> frames;
  EXPECT_TRUE(split_responses(out, frames)) << "bytes left over: " << out.size();
  for (const Response& r : frames) {
    EXPECT_EQ(r.magic, kResponseMagic);
    EXPECT_EQ(r.opcode, c.opcode);
    EXPECT_EQ(r.opaque, c.opaque);
    EXPECT_EQ(r.data_type, 0);
  }
  return frames;
}

// The one frame answering `text`: an error with memcached's words.
void expect_error(const ReplyContext& c, std::string_view text, Status status) {
  SCOPED_TRACE(std::string(text));
  const auto frames = encode(c, text);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].status, static_cast<uint16_t>(status));
  EXPECT_EQ(frames[0].extras, "");
  EXPECT_EQ(frames[0].key, "");
  EXPECT_EQ(frames[0].value, status_text(status));
  EXPECT_EQ(frames[0].cas, 0u);
}

// A bare success: status 0, no body.
void expect_ok(const ReplyContext& c, std::string_view text, uint64_t cas = 0) {
  SCOPED_TRACE(std::string(text));
  const auto frames = encode(c, text);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].status, 0);
  EXPECT_EQ(frames[0].body_length, 0u);
  EXPECT_EQ(frames[0].cas, cas);
}

void expect_nothing(const ReplyContext& c, std::string_view text) {
  std::string out;
  encode_reply(c, text, out);
  EXPECT_TRUE(out.empty()) << std::string(text) << " gave " << out.size() << " bytes";
}

// ------------------------------------------------------------ get family

TEST(BinaryReply, GetHitWholeFrameBytes) {
  std::string out;
  encode_reply(context(op::get, 0xa1b2c3d4), "VA 2 f5 c9\r\nhi\r\n", out);
  const std::string expected(
      "\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x06\xa1\xb2\xc3\xd4"
      "\x00\x00\x00\x00\x00\x00\x00\x09"
      "\x00\x00\x00\x05hi",
      30);
  EXPECT_EQ(out, expected);
}

TEST(BinaryReply, GetHits) {
  for (uint8_t o : {op::get, op::getq, op::gat, op::gatq}) {
    SCOPED_TRACE(int{o});
    const auto frames = encode(context(o), "VA 5 f4294967295 c123456789012\r\nhello\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, 0);
    EXPECT_EQ(frames[0].extras, u32(0xffffffff));
    EXPECT_EQ(frames[0].key, "");
    EXPECT_EQ(frames[0].value, "hello");
    EXPECT_EQ(frames[0].cas, 123456789012u);
  }
}

// A plain-key get travels as a classic gets (binary_request.h): its VALUE
// line says what mg's VA would, and END alone is a miss.
TEST(BinaryReply, ClassicGetsReplies) {
  for (uint8_t o : {op::get, op::getq}) {
    SCOPED_TRACE(int{o});
    const auto frames = encode(context(o), "VALUE k 5 5 123456789012\r\nhello\r\nEND\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, 0);
    EXPECT_EQ(frames[0].extras, u32(5));
    EXPECT_EQ(frames[0].key, "");
    EXPECT_EQ(frames[0].value, "hello");
    EXPECT_EQ(frames[0].cas, 123456789012u);
  }
  for (uint8_t o : {op::getk, op::getkq}) {
    const auto frames = encode(context(o, 1, "k"), "VALUE k 4294967295 0 7\r\n\r\nEND\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].extras, u32(0xffffffff));
    EXPECT_EQ(frames[0].key, "k");
    EXPECT_EQ(frames[0].value, "");
    EXPECT_EQ(frames[0].cas, 7u);
  }
  // The value may hold anything, "END" and line breaks included.
  const auto frames = encode(context(op::get), "VALUE k 0 8 3\r\nEND\r\nEND\r\nEND\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].value, "END\r\nEND");
  expect_error(context(op::get), "END\r\n", Status::key_not_found);
  expect_nothing(context(op::getq), "END\r\n");
  expect_nothing(context(op::getkq, 1, "k"), "END\r\n");
  const auto miss = encode(context(op::getk, 1, "k"), "END\r\n");
  ASSERT_EQ(miss.size(), 1u);
  EXPECT_EQ(miss[0].status, static_cast<uint16_t>(Status::key_not_found));
  EXPECT_EQ(miss[0].key, "k");
}

TEST(BinaryReply, GetkHitsCarryTheKey) {
  for (uint8_t o : {op::getk, op::getkq, op::gatk, op::gatkq}) {
    SCOPED_TRACE(int{o});
    const std::string key("k\x00\xff", 3);  // as the client sent it
    const auto frames = encode(context(o, 1, key), "VA 1 f0 c7\r\nv\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, 0);
    EXPECT_EQ(frames[0].extras_length, 4);
    EXPECT_EQ(frames[0].extras, u32(0));
    EXPECT_EQ(frames[0].key_length, 3);
    EXPECT_EQ(frames[0].key, key);
    EXPECT_EQ(frames[0].value, "v");
    EXPECT_EQ(frames[0].body_length, 8u);
    EXPECT_EQ(frames[0].cas, 7u);
  }
}

TEST(BinaryReply, EmptyAndBinaryValues) {
  auto frames = encode(context(op::get), "VA 0 f1 c2\r\n\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].value, "");
  EXPECT_EQ(frames[0].body_length, 4u);
  const std::string value("a\r\nb\0c", 6);
  frames = encode(context(op::get), "VA 6 f0 c2\r\n" + value + "\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].value, value);
}

TEST(BinaryReply, GetMisses) {
  expect_error(context(op::get), "EN\r\n", Status::key_not_found);
  expect_error(context(op::gat), "EN\r\n", Status::key_not_found);
  // getk's miss: the key as the body, no message (write_bin_miss_response).
  for (uint8_t o : {op::getk, op::gatk}) {
    const auto frames = encode(context(o, 5, "key"), "EN\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, static_cast<uint16_t>(Status::key_not_found));
    EXPECT_EQ(frames[0].extras, "");
    EXPECT_EQ(frames[0].key, "key");
    EXPECT_EQ(frames[0].value, "");
    EXPECT_EQ(frames[0].cas, 0u);
  }
  // Quiet gets say nothing on a miss.
  for (uint8_t o : {op::getq, op::getkq, op::gatq, op::gatkq})
    expect_nothing(context(o, 1, "k"), "EN\r\n");
}

TEST(BinaryReply, Touch) {
  // A touched item: its flags, no value, its cas.
  auto frames = encode(context(op::touch), "HD f7 c9\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].status, 0);
  EXPECT_EQ(frames[0].extras, u32(7));
  EXPECT_EQ(frames[0].value, "");
  EXPECT_EQ(frames[0].cas, 9u);
  // Also when the server sent the value anyway.
  frames = encode(context(op::touch), "VA 2 f7 c9\r\nvv\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].extras, u32(7));
  EXPECT_EQ(frames[0].value, "");
  expect_error(context(op::touch), "EN\r\n", Status::key_not_found);
}

// ------------------------------------------------------------ storage

TEST(BinaryReply, StoresReturnTheNewCas) {
  for (uint8_t o : {op::set, op::add, op::replace, op::append, op::prepend}) {
    expect_ok(context(o), "HD c12\r\n", 12);
  }
  for (uint8_t o : {op::setq, op::addq, op::replaceq, op::appendq, op::prependq}) {
    expect_nothing(context(o), "HD c12\r\n");
  }
}

TEST(BinaryReply, RefusedStoresByCommand) {
  // complete_update_bin: a refused add means the key exists, a refused
  // replace that it does not, else "not stored".
  expect_error(context(op::add), "NS\r\n", Status::key_exists);
  expect_error(context(op::addq), "NS\r\n", Status::key_exists);
  expect_error(context(op::replace), "NS\r\n", Status::key_not_found);
  expect_error(context(op::replaceq), "NS\r\n", Status::key_not_found);
  expect_error(context(op::set), "NS\r\n", Status::not_stored);
  expect_error(context(op::append), "NS\r\n", Status::not_stored);
  expect_error(context(op::prependq), "NS\r\n", Status::not_stored);
  // A compare-and-set against another cas, and against no item.
  expect_error(context(op::set), "EX\r\n", Status::key_exists);
  expect_error(context(op::setq), "EX\r\n", Status::key_exists);
  expect_error(context(op::set), "NF\r\n", Status::key_not_found);
  expect_error(context(op::appendq), "NF\r\n", Status::key_not_found);
}

TEST(BinaryReply, TooLargeAndOutOfMemory) {
  expect_error(context(op::set), "SERVER_ERROR object too large for cache\r\n", Status::too_large);
  expect_error(context(op::setq), "SERVER_ERROR object too large for cache\r\n", Status::too_large);
  expect_error(context(op::set), "SERVER_ERROR out of memory storing object\r\n",
               Status::out_of_memory);
  expect_error(context(op::add), "SERVER_ERROR Out of memory allocating\r\n",
               Status::out_of_memory);
}

TEST(BinaryReply, AFixedStatusWinsOverTheServersReply) {
  // A set refused as too large: the delete of the old value answers HD or
  // NF, the client hears "too large" either way, quiet or not.
  for (uint8_t o : {op::set, op::setq}) {
    ReplyContext c = context(o);
    c.fixed = Status::too_large;
    expect_error(c, "HD\r\n", Status::too_large);
    expect_error(c, "NF\r\n", Status::too_large);
    expect_error(c, "SERVER_ERROR timeout\r\n", Status::too_large);
  }
}

// ------------------------------------------------------------ delete, arithmetic

TEST(BinaryReply, Delete) {
  expect_ok(context(op::delete_), "HD\r\n");
  expect_ok(context(op::delete_), "HD c5\r\n", 0);  // a delete's reply has no cas
  expect_nothing(context(op::deleteq), "HD\r\n");
  expect_error(context(op::delete_), "NF\r\n", Status::key_not_found);
  expect_error(context(op::deleteq), "NF\r\n", Status::key_not_found);
  expect_error(context(op::delete_), "EX\r\n", Status::key_exists);
}

TEST(BinaryReply, ArithmeticReturnsTheValueAsEightBytes) {
  for (uint8_t o : {op::increment, op::decrement}) {
    auto frames = encode(context(o), "VA 2 c3\r\n42\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, 0);
    EXPECT_EQ(frames[0].extras, "");
    EXPECT_EQ(frames[0].value, u64(42));
    EXPECT_EQ(frames[0].cas, 3u);
    frames = encode(context(o), "VA 20 c4\r\n18446744073709551615\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].value, u64(0xffffffffffffffffull));
  }
  expect_nothing(context(op::incrementq), "VA 1 c3\r\n1\r\n");
  expect_nothing(context(op::decrementq), "VA 1 c3\r\n0\r\n");
  expect_error(context(op::increment), "NF\r\n", Status::key_not_found);
  expect_error(context(op::incrementq), "NF\r\n", Status::key_not_found);
  expect_error(context(op::decrement), "EX\r\n", Status::key_exists);
  expect_error(context(op::increment),
               "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
               Status::non_numeric);
  expect_error(context(op::decrementq),
               "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
               Status::non_numeric);
}

// ------------------------------------------------------------ errors

TEST(BinaryReply, ErrorLines) {
  expect_error(context(op::get), "CLIENT_ERROR bad command line format\r\n",
               Status::invalid_arguments);
  expect_error(context(op::set), "CLIENT_ERROR bad data chunk\r\n", Status::invalid_arguments);
  expect_error(context(op::flush), "CLIENT_ERROR flush_all not allowed\r\n", Status::auth_error);
  expect_error(context(op::get), "ERROR\r\n", Status::unknown_command);
  expect_error(context(op::getq), "ERROR\r\n", Status::unknown_command);
}

TEST(BinaryReply, ProxyFailuresAreTemporaryWithTheirMessage) {
  for (uint8_t o : {op::get, op::getkq, op::set, op::incrementq}) {
    const auto frames = encode(context(o, 1, "k"), "SERVER_ERROR no server available\r\n");
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].status, static_cast<uint16_t>(Status::temporary_failure));
    EXPECT_EQ(frames[0].value, "no server available");
    EXPECT_EQ(frames[0].key, "");
  }
}

// ------------------------------------------------------------ the rest

TEST(BinaryReply, NoopFlushQuit) {
  expect_ok(context(op::noop), "MN\r\n");
  expect_ok(context(op::flush), "OK\r\n");
  expect_nothing(context(op::flushq), "OK\r\n");
  expect_ok(context(op::quit), "");
  expect_nothing(context(op::quitq), "");
}

TEST(BinaryReply, VersionBodyIsTheVersionString) {
  const auto frames = encode(context(op::version), "VERSION 1.6.18-memshard-0.9\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].status, 0);
  EXPECT_EQ(frames[0].key, "");
  EXPECT_EQ(frames[0].extras, "");
  EXPECT_EQ(frames[0].value, "1.6.18-memshard-0.9");
}

TEST(BinaryReply, StatsOneFramePerLineThenAnEmptyOne) {
  const auto frames = encode(context(op::stat, 9),
                             "STAT pid 123\r\nSTAT version 1.6.18 x\r\nSTAT empty \r\nEND\r\n");
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].key, "pid");
  EXPECT_EQ(frames[0].value, "123");
  EXPECT_EQ(frames[1].key, "version");
  EXPECT_EQ(frames[1].value, "1.6.18 x");
  EXPECT_EQ(frames[2].key, "empty");
  EXPECT_EQ(frames[2].value, "");
  // The end of the list: key and value empty, status 0.
  EXPECT_EQ(frames[3].body_length, 0u);
  EXPECT_EQ(frames[3].key_length, 0);
  for (const Response& r : frames) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.extras_length, 0);
    EXPECT_EQ(r.cas, 0u);
  }
  // No STAT lines at all: only the end frame.
  EXPECT_EQ(encode(context(op::stat), "END\r\n").size(), 1u);
}

// A group memshard does not proxy: its text `stats <group>` says ERROR,
// which a binary client hears as an unknown command, never "not found".
TEST(BinaryReply, StatsOfAGroupNotProxiedIsAnUnknownCommand) {
  const auto frames = encode(context(op::stat, 4), "ERROR\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].status, static_cast<uint16_t>(Status::unknown_command));
  EXPECT_EQ(frames[0].opaque, 4u);
}

TEST(BinaryReply, OpaqueIsEchoedByteForByte) {
  for (uint32_t opaque : {0u, 1u, 0x80000000u, 0xffffffffu}) {
    for (std::string_view text : {"EN\r\n", "HD c1\r\n", "ERROR\r\n", "VA 1 f0 c1\r\nv\r\n"}) {
      std::string out;
      encode_reply(context(op::getk, opaque, "k"), text, out);
      ASSERT_GE(out.size(), kHeaderSize);
      EXPECT_EQ(testing::get32(out, 12), opaque) << text;
    }
  }
}

TEST(BinaryReply, AppendsToWhatIsThere) {
  std::string out = "before";
  encode_reply(context(op::noop), "MN\r\n", out);
  EXPECT_EQ(out.size(), 6 + kHeaderSize);
  EXPECT_EQ(out.substr(0, 6), "before");
}

}  // namespace
}  // namespace memshard::proto::binary
