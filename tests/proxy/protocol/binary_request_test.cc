// The binary frame header and the translation of each opcode into one
// text/meta request (proxy/protocol/binary_request.h): exact lines, the
// reply context, the frame checks memcached 1.6.18 makes (and the answer
// or close each earns), and the header bytes of binary.h.
#include "proxy/protocol/binary_request.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "binary_test_util.h"
#include "proxy/protocol/base64.h"

namespace memshard::proto::binary {
namespace {

using testing::frame;
using testing::FrameSpec;
using testing::Response;
using testing::split_responses;
using testing::u32;
using testing::u64;

std::string store_extras(uint32_t flags, uint32_t exptime) {
  return u32(flags) + u32(exptime);
}

std::string arith_extras(uint64_t delta, uint64_t initial, uint32_t exptime) {
  return u64(delta) + u64(initial) + u32(exptime);
}

class BinaryRequest : public ::testing::Test {
 protected:
  // Translates the frame `f` (the header decoded from its bytes).
  const Translation& translate_frame(const FrameSpec& f) {
    bytes_ = frame(f);
    const Header h = decode_header(reinterpret_cast<const unsigned char*>(bytes_.data()));
    const size_t ext = std::min<size_t>(h.extras_length, bytes_.size() - kHeaderSize);
    const size_t key = std::min<size_t>(h.key_length, bytes_.size() - kHeaderSize - ext);
    translate(h, std::string_view(bytes_).substr(kHeaderSize, ext),
              std::string_view(bytes_).substr(kHeaderSize + ext, key), limits_, out_);
    return out_;
  }

  // The frame must become `line` on the text path.
  void expect_line(const FrameSpec& f, std::string_view line, uint32_t value_length = 0) {
    SCOPED_TRACE(std::string(line));
    const Translation& t = translate_frame(f);
    EXPECT_EQ(t.kind, Translation::Kind::text);
    EXPECT_EQ(t.line, line);
    EXPECT_EQ(t.value_length, value_length);
    EXPECT_EQ(t.swallow, 0u);
    EXPECT_FALSE(t.close_after);
    EXPECT_TRUE(t.reply.empty());
    EXPECT_EQ(t.context.opcode, f.opcode);
    EXPECT_EQ(t.context.opaque, f.opaque);
    EXPECT_EQ(t.context.fixed, Status::ok);
  }

  // The frame must be answered without a server: one error frame.
  void expect_answer(const FrameSpec& f, Status status, uint64_t swallow, bool close_after) {
    const Translation& t = translate_frame(f);
    ASSERT_EQ(t.kind, Translation::Kind::answer);
    EXPECT_TRUE(t.line.empty()) << t.line;
    EXPECT_EQ(t.swallow, swallow);
    EXPECT_EQ(t.close_after, close_after);
    std::vector<Response> frames;
    ASSERT_TRUE(split_responses(t.reply, frames));
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].magic, kResponseMagic);
    EXPECT_EQ(frames[0].opcode, f.opcode);
    EXPECT_EQ(frames[0].status, static_cast<uint16_t>(status));
    EXPECT_EQ(frames[0].opaque, f.opaque);
    EXPECT_EQ(frames[0].cas, 0u);
    EXPECT_EQ(frames[0].value, status_text(status));
  }

  void expect_protocol_error(const FrameSpec& f) {
    expect_answer(f, Status::invalid_arguments, 0, true);
  }

  Limits limits_;
  Translation out_;
  std::string bytes_;
};

// ------------------------------------------------------------ header bytes

TEST(BinaryHeader, DecodesEveryFieldBigEndian) {
  const unsigned char b[kHeaderSize] = {0x80, 0x01, 0x01, 0x02, 0x08, 0x00, 0xab, 0xcd,
                                        0x00, 0x01, 0x02, 0x03, 0xde, 0xad, 0xbe, 0xef,
                                        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  const Header h = decode_header(b);
  EXPECT_EQ(h.magic, 0x80);
  EXPECT_EQ(h.opcode, op::set);
  EXPECT_EQ(h.key_length, 0x0102);
  EXPECT_EQ(h.extras_length, 8);
  EXPECT_EQ(h.data_type, 0);
  EXPECT_EQ(h.vbucket_or_status, 0xabcd);
  EXPECT_EQ(h.body_length, 0x00010203u);
  EXPECT_EQ(h.opaque, 0xdeadbeefu);
  EXPECT_EQ(h.cas, 0x0102030405060708ull);
}

TEST(BinaryHeader, ResponseHeaderLayout) {
  std::string out = "x";  // appended to, not replaced
  append_response_header(out, op::getk, Status::key_exists, 4, 0x0203, 0x01020304, 0xcafef00d,
                         0x1122334455667788ull);
  const std::string expected(
      "x\x81\x0c\x02\x03\x04\x00\x00\x02\x01\x02\x03\x04\xca\xfe\xf0\x0d"
      "\x11\x22\x33\x44\x55\x66\x77\x88",
      25);
  EXPECT_EQ(out, expected);
}

TEST(BinaryHeader, ErrorFrameCarriesMemcachedsText) {
  std::string out;
  append_error(out, op::get, 7, Status::key_not_found);
  const std::string expected(
      "\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x00\x00\x00\x07"
      "\x00\x00\x00\x00\x00\x00\x00\x00Not found",
      33);
  EXPECT_EQ(out, expected);
}

TEST(BinaryHeader, StatusTextsAreMemcachedsWords) {
  EXPECT_EQ(status_text(Status::ok), "");
  EXPECT_EQ(status_text(Status::key_not_found), "Not found");
  EXPECT_EQ(status_text(Status::key_exists), "Data exists for key.");
  EXPECT_EQ(status_text(Status::too_large), "Too large.");
  EXPECT_EQ(status_text(Status::invalid_arguments), "Invalid arguments");
  EXPECT_EQ(status_text(Status::not_stored), "Not stored.");
  EXPECT_EQ(status_text(Status::non_numeric), "Non-numeric server-side value for incr or decr");
  EXPECT_EQ(status_text(Status::auth_error), "Auth failure.");
  EXPECT_EQ(status_text(Status::unknown_command), "Unknown command");
  EXPECT_EQ(status_text(Status::out_of_memory), "Out of memory");
  EXPECT_EQ(status_text(Status::temporary_failure), "Temporary failure");
}

TEST(BinaryHeader, NumbersAreBigEndian) {
  const unsigned char b[8] = {0x01, 0x02, 0x03, 0x04, 0xf5, 0xf6, 0xf7, 0xf8};
  EXPECT_EQ(read_u32(b), 0x01020304u);
  EXPECT_EQ(read_u32(b + 4), 0xf5f6f7f8u);
  EXPECT_EQ(read_u64(b), 0x01020304f5f6f7f8ull);
}

TEST(BinaryHeader, QuietOpcodesAndTheirLoudForms) {
  const std::pair<uint8_t, uint8_t> quiet[] = {{op::getq, op::get},
                                               {op::getkq, op::getk},
                                               {op::gatq, op::gat},
                                               {op::gatkq, op::gatk},
                                               {op::setq, op::set},
                                               {op::addq, op::add},
                                               {op::replaceq, op::replace},
                                               {op::deleteq, op::delete_},
                                               {op::incrementq, op::increment},
                                               {op::decrementq, op::decrement},
                                               {op::quitq, op::quit},
                                               {op::flushq, op::flush},
                                               {op::appendq, op::append},
                                               {op::prependq, op::prepend}};
  for (auto [q, loud] : quiet) {
    EXPECT_TRUE(is_quiet(q)) << int{q};
    EXPECT_EQ(loud_opcode(q), loud) << int{q};
    EXPECT_FALSE(is_quiet(loud)) << int{loud};
    EXPECT_EQ(loud_opcode(loud), loud) << int{loud};
  }
  for (uint8_t o : {op::noop, op::version, op::stat, op::verbosity, op::touch, op::sasl_auth,
                    uint8_t{0x50}, uint8_t{0xff}}) {
    EXPECT_FALSE(is_quiet(o)) << int{o};
    EXPECT_EQ(loud_opcode(o), o);
  }
}

// ------------------------------------------------------------ retrievals

TEST_F(BinaryRequest, GetFamily) {
  // A plain key: a classic gets, which the outbox joins with the other gets
  // queued for its server (its reply has the flags and the cas).
  expect_line({.opcode = op::get, .key = "k", .opaque = 9}, "gets k\r\n");
  EXPECT_TRUE(out_.context.key.empty()) << "get replies carry no key";
  expect_line({.opcode = op::getq, .key = "k"}, "gets k\r\n");
  EXPECT_TRUE(out_.context.key.empty());
  expect_line({.opcode = op::getk, .key = "key1"}, "gets key1\r\n");
  EXPECT_EQ(out_.context.key, "key1");
  expect_line({.opcode = op::getkq, .key = "key2", .opaque = 0xffffffff}, "gets key2\r\n");
  EXPECT_EQ(out_.context.key, "key2");
  // A key a text line cannot hold: mg with the key in base64.
  expect_line({.opcode = op::getkq, .key = "k 2"}, "mg ayAy b v f t c\r\n");
  EXPECT_EQ(out_.context.key, "k 2");
}

TEST_F(BinaryRequest, GatFamilyAndTouch) {
  expect_line({.opcode = op::gat, .extras = u32(100), .key = "k"}, "mg k v f c T100\r\n");
  expect_line({.opcode = op::gatq, .extras = u32(0), .key = "k"}, "mg k v f c T0\r\n");
  expect_line({.opcode = op::gatk, .extras = u32(7), .key = "kk"}, "mg kk v f c T7\r\n");
  EXPECT_EQ(out_.context.key, "kk");
  expect_line({.opcode = op::gatkq, .extras = u32(7), .key = "kq"}, "mg kq v f c T7\r\n");
  EXPECT_EQ(out_.context.key, "kq");
  expect_line({.opcode = op::touch, .extras = u32(2592000), .key = "k"}, "mg k f c T2592000\r\n");
  EXPECT_TRUE(out_.context.key.empty());
}

TEST_F(BinaryRequest, ExptimesPast2038AreClampedToTheLargestSignedOne) {
  expect_line({.opcode = op::gat, .extras = u32(0x7fffffff), .key = "k"},
              "mg k v f c T2147483647\r\n");
  expect_line({.opcode = op::gat, .extras = u32(0x80000000), .key = "k"},
              "mg k v f c T2147483647\r\n");
  expect_line({.opcode = op::set, .extras = store_extras(0, 0xfffffffe), .key = "k"},
              "ms k 0 T2147483647 c\r\n");
}

TEST_F(BinaryRequest, GetChecks) {
  // Extras on a get, a body past the key, no key: invalid arguments, closed.
  expect_protocol_error({.opcode = op::get, .extras = u32(0), .key = "k"});
  expect_protocol_error({.opcode = op::get, .key = "k", .value = "v"});
  expect_protocol_error({.opcode = op::getk, .key = ""});
  expect_protocol_error({.opcode = op::getq, .key = ""});
  // gat and touch need 4 bytes of extras and a key.
  expect_protocol_error({.opcode = op::gat, .key = "k"});
  expect_protocol_error({.opcode = op::touch, .extras = u64(0), .key = "k"});
  expect_protocol_error({.opcode = op::gatk, .extras = u32(0), .key = ""});
}

TEST_F(BinaryRequest, TouchWithBytesPastTheKeyLeavesThemForTheNextFrame) {
  // memcached does not check a touch's body length: the translation covers
  // the extras and key only, and nothing is swallowed.
  expect_line({.opcode = op::touch, .extras = u32(0), .key = "k", .value = "xyz"},
              "mg k f c T0\r\n");
}

// ------------------------------------------------------------ storage

TEST_F(BinaryRequest, SetAddReplace) {
  expect_line({.opcode = op::set, .extras = store_extras(0, 0), .key = "k", .value = "abc"},
              "ms k 3 c\r\n", 3);
  expect_line({.opcode = op::set, .extras = store_extras(5, 100), .key = "k", .value = "abc"},
              "ms k 3 F5 T100 c\r\n", 3);
  expect_line({.opcode = op::setq, .extras = store_extras(0xffffffff, 0), .key = "k"},
              "ms k 0 F4294967295 c\r\n");
  expect_line({.opcode = op::add, .extras = store_extras(0, 0), .key = "k", .value = "v"},
              "ms k 1 ME c\r\n", 1);
  expect_line({.opcode = op::addq, .extras = store_extras(1, 0), .key = "k", .value = "v"},
              "ms k 1 F1 ME c\r\n", 1);
  expect_line({.opcode = op::replace, .extras = store_extras(0, 9), .key = "k", .value = "vv"},
              "ms k 2 T9 MR c\r\n", 2);
  expect_line({.opcode = op::replaceq, .extras = store_extras(0, 0), .key = "k", .value = "v"},
              "ms k 1 MR c\r\n", 1);
}

TEST_F(BinaryRequest, ANonZeroCasMakesEveryStoreACompareAndSet) {
  expect_line(
      {.opcode = op::set, .extras = store_extras(0, 0), .key = "k", .value = "v", .cas = 42},
      "ms k 1 C42 c\r\n", 1);
  // memcached's process_bin_update: a cas turns add and replace into cas.
  expect_line(
      {.opcode = op::add, .extras = store_extras(0, 0), .key = "k", .value = "v", .cas = 42},
      "ms k 1 C42 c\r\n", 1);
  expect_line({.opcode = op::replaceq,
               .extras = store_extras(0, 0),
               .key = "k",
               .value = "v",
               .cas = 0xffffffffffffffffull},
              "ms k 1 C18446744073709551615 c\r\n", 1);
}

TEST_F(BinaryRequest, AppendPrependIgnoreFlagsAndKeepTheCas) {
  expect_line({.opcode = op::append, .key = "k", .value = "tail"}, "ms k 4 MA c\r\n", 4);
  expect_line({.opcode = op::appendq, .key = "k", .value = "t", .cas = 3}, "ms k 1 C3 MA c\r\n", 1);
  expect_line({.opcode = op::prepend, .key = "k", .value = "head"}, "ms k 4 MP c\r\n", 4);
  expect_line({.opcode = op::prependq, .key = "k", .value = ""}, "ms k 0 MP c\r\n");
}

TEST_F(BinaryRequest, StorageChecks) {
  // set/add/replace need 8 bytes of extras and a key.
  expect_protocol_error({.opcode = op::set, .key = "k", .value = "v"});
  expect_protocol_error({.opcode = op::set, .extras = u32(0), .key = "k", .value = "v"});
  expect_protocol_error({.opcode = op::add, .extras = store_extras(0, 0), .key = ""});
  expect_protocol_error({.opcode = op::replaceq, .extras = std::string(12, '\0'), .key = "k"});
  // append/prepend: no extras, a key.
  expect_protocol_error({.opcode = op::append, .extras = store_extras(0, 0), .key = "k"});
  expect_protocol_error({.opcode = op::prepend, .key = "", .value = "v"});
}

TEST_F(BinaryRequest, ValueOverItemSizeMax) {
  limits_.item_size_max = 10;
  // Exactly the limit is forwarded.
  expect_line(
      {.opcode = op::set, .extras = store_extras(0, 0), .key = "k", .value = std::string(10, 'v')},
      "ms k 10 c\r\n", 10);
  // A set one byte over: the key's old value is deleted, the value
  // swallowed, and the answer is "too large" whatever the delete says.
  const Translation& t = translate_frame(
      {.opcode = op::set, .extras = store_extras(0, 0), .key = "k", .value = std::string(11, 'v')});
  EXPECT_EQ(t.kind, Translation::Kind::text);
  EXPECT_EQ(t.line, "md k\r\n");
  EXPECT_EQ(t.value_length, 0u);
  EXPECT_EQ(t.swallow, 11u);
  EXPECT_EQ(t.context.fixed, Status::too_large);
  EXPECT_FALSE(t.close_after);
  // A binary key is deleted by its base64 form.
  const Translation& b = translate_frame({.opcode = op::setq,
                                          .extras = store_extras(0, 0),
                                          .key = "a b",
                                          .value = std::string(11, 'v')});
  EXPECT_EQ(b.line, "md YSBi b\r\n");
  EXPECT_EQ(b.context.fixed, Status::too_large);
  // add, replace, append, prepend: answered at once, value swallowed.
  expect_answer(
      {.opcode = op::add, .extras = store_extras(0, 0), .key = "k", .value = std::string(11, 'v')},
      Status::too_large, 11, false);
  expect_answer({.opcode = op::appendq, .key = "k", .value = std::string(12, 'v')},
                Status::too_large, 12, false);
}

TEST_F(BinaryRequest, AnnouncedBodyIsSwallowedUnreadWhenTooLarge) {
  // The value is not needed to decide: only the header says how long it is.
  bytes_ = frame({.opcode = op::set,
                  .extras = store_extras(0, 0),
                  .key = "k",
                  .body_length = 9 + (1 << 20) + 1});
  const Header h = decode_header(reinterpret_cast<const unsigned char*>(bytes_.data()));
  translate(h, std::string_view(bytes_).substr(kHeaderSize, 8),
            std::string_view(bytes_).substr(kHeaderSize + 8, 1), limits_, out_);
  EXPECT_EQ(out_.line, "md k\r\n");
  EXPECT_EQ(out_.swallow, (1u << 20) + 1);
  EXPECT_EQ(out_.context.fixed, Status::too_large);
}

// ------------------------------------------------------------ delete, arithmetic

TEST_F(BinaryRequest, Delete) {
  expect_line({.opcode = op::delete_, .key = "k"}, "md k\r\n");
  expect_line({.opcode = op::deleteq, .key = "k", .cas = 12}, "md k C12\r\n");
  expect_protocol_error({.opcode = op::delete_, .key = ""});
  expect_protocol_error({.opcode = op::delete_, .extras = u32(0), .key = "k"});
  expect_protocol_error({.opcode = op::delete_, .key = "k", .value = "v"});
}

TEST_F(BinaryRequest, IncrementDecrement) {
  expect_line({.opcode = op::increment, .extras = arith_extras(1, 5, 0), .key = "n"},
              "ma n v c D1 N0 J5\r\n");
  expect_line({.opcode = op::incrementq, .extras = arith_extras(7, 0, 100), .key = "n"},
              "ma n v c D7 N100 J0\r\n");
  expect_line({.opcode = op::decrement, .extras = arith_extras(2, 10, 0), .key = "n"},
              "ma n v c D2 N0 J10 MD\r\n");
  expect_line({.opcode = op::decrementq,
               .extras = arith_extras(0xffffffffffffffffull, 0xfffffffffffffffeull, 0),
               .key = "n"},
              "ma n v c D18446744073709551615 N0 J18446744073709551614 MD\r\n");
  expect_line({.opcode = op::increment, .extras = arith_extras(1, 0, 0), .key = "n", .cas = 9},
              "ma n v c D1 N0 J0 C9\r\n");
}

TEST_F(BinaryRequest, ArithmeticExpiryAllOnesMeansFailOnAMiss) {
  expect_line({.opcode = op::increment, .extras = arith_extras(1, 5, 0xffffffff), .key = "n"},
              "ma n v c D1\r\n");
  expect_line({.opcode = op::decrementq, .extras = arith_extras(3, 5, 0xffffffff), .key = "n"},
              "ma n v c D3 MD\r\n");
  // One less is an exptime like any other (clamped past 2038).
  expect_line({.opcode = op::increment, .extras = arith_extras(1, 5, 0xfffffffe), .key = "n"},
              "ma n v c D1 N2147483647 J5\r\n");
}

TEST_F(BinaryRequest, ArithmeticChecks) {
  expect_protocol_error({.opcode = op::increment, .extras = u64(1), .key = "n"});
  expect_protocol_error({.opcode = op::increment, .extras = arith_extras(1, 0, 0), .key = ""});
  expect_protocol_error(
      {.opcode = op::decrement, .extras = arith_extras(1, 0, 0), .key = "n", .value = "1"});
}

// ------------------------------------------------------------ keys

TEST_F(BinaryRequest, KeysATextLineCannotHoldTravelBase64) {
  expect_line({.opcode = op::get, .key = "a b"}, "mg YSBi b v f t c\r\n");
  expect_line({.opcode = op::getk, .key = std::string("\x00\x01", 2)}, "mg AAE= b v f t c\r\n");
  // getk's reply carries the key as the client sent it, not its base64.
  EXPECT_EQ(out_.context.key, std::string("\x00\x01", 2));
  expect_line({.opcode = op::set, .extras = store_extras(1, 0), .key = "k\r\n", .value = "v"},
              "ms aw0K 1 b F1 c\r\n", 1);
  expect_line({.opcode = op::delete_, .key = "\xff"}, "md /w== b\r\n");
  expect_line({.opcode = op::increment, .extras = arith_extras(1, 0, 0xffffffff), .key = "\t"},
              "ma CQ== b v c D1\r\n");
  expect_line({.opcode = op::touch, .extras = u32(1), .key = " "}, "mg IA== b f c T1\r\n");
}

TEST_F(BinaryRequest, KeyLengthLimits) {
  // 250 plain bytes travel as they are.
  const std::string k250(250, 'k');
  expect_line({.opcode = op::get, .key = k250}, "gets " + k250 + "\r\n");
  expect_line({.opcode = op::gat, .extras = u32(0), .key = k250}, "mg " + k250 + " v f c T0\r\n");
  // 251: invalid arguments, then the connection closes (memcached's check).
  expect_protocol_error({.opcode = op::get, .key = std::string(251, 'k')});
  expect_protocol_error({.opcode = op::set,
                         .extras = store_extras(0, 0),
                         .key = std::string(300, 'k'),
                         .value = "v"});
  // A key needing base64: 186 bytes encode to 248 characters and travel...
  const std::string b186(186, ' ');
  std::string encoded;
  base64_encode(b186, encoded);
  ASSERT_EQ(encoded.size(), 248u);
  expect_line({.opcode = op::get, .key = b186}, "mg " + encoded + " b v f t c\r\n");
  // ...187 do not fit memcached's 250-character key token: a read is a
  // miss (silent when quiet), the connection kept (a documented difference
  // from memcached, which stores such keys)...
  expect_answer({.opcode = op::get, .key = std::string(187, ' ')}, Status::key_not_found, 0, false);
  EXPECT_EQ(translate_frame({.opcode = op::getkq, .key = std::string(187, ' ')}).reply, "");
  // A refused store's value is swallowed.
  expect_answer({.opcode = op::set,
                 .extras = store_extras(0, 0),
                 .key = std::string(200, ' '),
                 .value = "vv"},
                Status::invalid_arguments, 2, false);
}

// ------------------------------------------------------------ the rest

TEST_F(BinaryRequest, CommandsWithoutAKey) {
  expect_line({.opcode = op::noop, .opaque = 5}, "mn\r\n");
  expect_line({.opcode = op::version}, "version\r\n");
  expect_line({.opcode = op::quit}, "quit\r\n");
  expect_line({.opcode = op::quitq}, "quit\r\n");
  expect_line({.opcode = op::stat}, "stats\r\n");
  expect_line({.opcode = op::flush}, "flush_all\r\n");
  expect_line({.opcode = op::flushq, .extras = u32(0)}, "flush_all\r\n");
  expect_line({.opcode = op::flush, .extras = u32(60)}, "flush_all 60\r\n");
  expect_line({.opcode = op::flush, .extras = u32(0x90000000)}, "flush_all 2147483647\r\n");
}

TEST_F(BinaryRequest, CommandsWithoutAKeyRefuseABody) {
  expect_protocol_error({.opcode = op::noop, .key = "k"});
  expect_protocol_error({.opcode = op::version, .value = "v"});
  expect_protocol_error({.opcode = op::quit, .extras = u32(0)});
  expect_protocol_error({.opcode = op::flush, .key = "k"});
  expect_protocol_error({.opcode = op::flush, .extras = u64(0)});
  expect_protocol_error({.opcode = op::flush, .extras = u32(0), .value = "v"});
  expect_protocol_error({.opcode = op::stat, .extras = u32(0)});
  expect_protocol_error({.opcode = op::sasl_list_mechs, .key = "k"});
}

// A group memcached or memshard knows becomes memshard's text `stats
// <group>`; one nobody knows is "not found", as memcached answers it.
TEST_F(BinaryRequest, StatWithAGroupAsksForItAsTextWhenAnyoneKnowsIt) {
  for (const char* group :
       {"items", "slabs", "sizes", "sizes_enable", "sizes_disable", "settings", "reset",
        "detail on", "detail off", "detail dump", "servers", "hotkeys"}) {
    expect_line({.opcode = op::stat, .key = group, .opaque = 3},
                std::string("stats ") + group + "\r\n");
  }
  // memcached compares these by prefix.
  expect_line({.opcode = op::stat, .key = "settingsx"}, "stats settingsx\r\n");
  expect_line({.opcode = op::stat, .key = "resetall"}, "stats resetall\r\n");
  // A prefix match carries no other words or lines into the text line.
  for (std::string group : {std::string("reset\r\nflush_all"), std::string("settings x"),
                            std::string("reset\0", 6), std::string("settings\t")}) {
    SCOPED_TRACE(group);
    expect_answer({.opcode = op::stat, .key = group, .opaque = 3}, Status::key_not_found, 0, false);
  }
  for (const char* group : {"nosuchgroup", "conns", "detail", "detail x", "items_", "a b"}) {
    SCOPED_TRACE(group);
    expect_answer({.opcode = op::stat, .key = group, .opaque = 3}, Status::key_not_found, 0, false);
  }
}

TEST_F(BinaryRequest, SaslIsAnUnknownCommandAsWithoutSaslSupport) {
  expect_answer({.opcode = op::sasl_list_mechs}, Status::unknown_command, 0, false);
  expect_answer({.opcode = op::sasl_auth, .key = "PLAIN", .value = std::string("\0u\0p", 4)},
                Status::unknown_command, 4, false);
  expect_answer({.opcode = op::sasl_step, .key = "PLAIN"}, Status::unknown_command, 0, false);
  expect_protocol_error({.opcode = op::sasl_auth, .value = "x"});
  expect_protocol_error({.opcode = op::sasl_step, .extras = u32(0), .key = "PLAIN"});
}

TEST_F(BinaryRequest, UnknownOpcodesAndVerbosity) {
  expect_answer({.opcode = 0x50}, Status::unknown_command, 0, false);
  expect_answer({.opcode = 0xff, .opaque = 77}, Status::unknown_command, 0, false);
  // The rest of the frame is swallowed (memcached swallows body_length
  // bytes after the extras and key: a documented difference).
  expect_answer({.opcode = 0x50, .extras = "e", .key = "kk", .value = "vvv"},
                Status::unknown_command, 3, false);
  // verbosity has no binary handler in memcached 1.6.18.
  expect_answer({.opcode = op::verbosity, .extras = u32(0)}, Status::unknown_command, 0, false);
  expect_answer({.opcode = op::verbosity}, Status::unknown_command, 0, false);
}

TEST_F(BinaryRequest, LengthsThatDoNotFitTheBody) {
  // Key longer than the body: unknown command, then closed.
  expect_answer({.opcode = op::get, .key = "abc", .body_length = 2}, Status::unknown_command, 0,
                true);
  // Key and extras longer than the body.
  expect_answer({.opcode = op::set, .extras = store_extras(0, 0), .key = "k", .body_length = 8},
                Status::unknown_command, 0, true);
  expect_answer({.opcode = 0x50, .extras = "ee", .body_length = 1}, Status::unknown_command, 0,
                true);
}

TEST_F(BinaryRequest, BadMagicCloses) {
  for (uint8_t magic : {uint8_t{0x81}, uint8_t{0x00}, uint8_t{'g'}}) {
    const Translation& t = translate_frame({.magic = magic, .opcode = op::noop});
    EXPECT_EQ(t.kind, Translation::Kind::close) << int{magic};
    EXPECT_TRUE(t.reply.empty());
    EXPECT_TRUE(t.line.empty());
  }
}

TEST_F(BinaryRequest, TranslationIsResetBetweenFrames) {
  translate_frame({.opcode = op::getk, .key = "first", .opaque = 1});
  EXPECT_EQ(out_.context.key, "first");
  expect_line({.opcode = op::get, .key = "second", .opaque = 2}, "gets second\r\n");
  EXPECT_TRUE(out_.context.key.empty());
  translate_frame({.opcode = 0x50});
  expect_line({.opcode = op::noop}, "mn\r\n");
}

}  // namespace
}  // namespace memshard::proto::binary
