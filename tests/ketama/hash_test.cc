// The twelve key hashes: twemproxy's published values, keys with bytes
// >= 0x80 (twemproxy reads them as signed char), and libhashkit agreement.
#include "ketama/hash.h"

#include <gtest/gtest.h>
#include <libhashkit-1.0/hashkit.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

namespace memshard::ketama {
namespace {

// twemproxy's and libmemcached's published vectors for "apple".
TEST(Hash, AppleVectors) {
  const std::pair<HashFunction, uint32_t> expected[] = {
      {HashFunction::one_at_a_time, 2297466611u}, {HashFunction::md5, 3195025439u},
      {HashFunction::crc16, 3662830516u},         {HashFunction::crc32, 10542u},
      {HashFunction::crc32a, 2838417488u},        {HashFunction::fnv1_32, 67176023u},
      {HashFunction::fnv1a_32, 280767167u},       {HashFunction::fnv1_64, 473199127u},
      {HashFunction::fnv1a_64, 1488911807u},      {HashFunction::hsieh, 3738850110u},
      {HashFunction::jenkins, 1442444624u},       {HashFunction::murmur, 4142305122u},
  };
  ASSERT_EQ(std::size(expected), std::size(kAllHashFunctions));
  for (const auto& [f, value] : expected) {
    EXPECT_EQ(hash(f, "apple"), value) << hash_name(f);
  }
}

// Values computed from twemproxy 0.5's C semantics: fnv* and one_at_a_time
// sign-extend each byte (const char on x86), hsieh sign-extends the third
// byte of a 3-byte tail. UTF-8 "café" and a binary key.
TEST(Hash, HighBytesAreReadAsSignedChar) {
  const std::string cafe = "caf\xc3\xa9";
  const std::string binary("\xff\x80\x00\x7f", 4);
  EXPECT_EQ(hash(HashFunction::one_at_a_time, cafe), 3650908318u);
  EXPECT_EQ(hash(HashFunction::fnv1_64, cafe), 2315714289u);
  EXPECT_EQ(hash(HashFunction::fnv1a_64, cafe), 3472276361u);
  EXPECT_EQ(hash(HashFunction::fnv1_32, cafe), 3598905713u);
  EXPECT_EQ(hash(HashFunction::fnv1a_32, cafe), 1970454601u);
  EXPECT_EQ(hash(HashFunction::one_at_a_time, binary), 817265028u);
  EXPECT_EQ(hash(HashFunction::fnv1_64, binary), 2741951647u);
  EXPECT_EQ(hash(HashFunction::fnv1a_64, binary), 3076769747u);
  EXPECT_EQ(hash(HashFunction::fnv1_32, binary), 165547615u);
  EXPECT_EQ(hash(HashFunction::fnv1a_32, binary), 4294773651u);

  EXPECT_EQ(hash(HashFunction::crc16, cafe), 4129724007u);
  EXPECT_EQ(hash(HashFunction::crc16, binary), 2463432577u);
  EXPECT_EQ(hash(HashFunction::crc32a, cafe), 2561491637u);  // zlib's crc32
  EXPECT_EQ(hash(HashFunction::hsieh, cafe), 3728705621u);
  EXPECT_EQ(hash(HashFunction::hsieh, "ab\xe9"), 307729637u);  // unsigned would be 91263425
  EXPECT_EQ(hash(HashFunction::hsieh, "abc\xe9"), 4186542402u);
}

TEST(Hash, EmptyKey) {
  EXPECT_EQ(hash(HashFunction::hsieh, ""), 0u);
  EXPECT_EQ(hash(HashFunction::crc16, ""), 0u);
  EXPECT_EQ(hash(HashFunction::crc32a, ""), 0u);
  EXPECT_EQ(hash(HashFunction::fnv1a_64, std::string_view()), 0x84222325u);
  EXPECT_EQ(hash(HashFunction::one_at_a_time, std::string_view()), 0u);
}

hashkit_hash_algorithm_t libhashkit_algorithm(HashFunction f) {
  switch (f) {
    case HashFunction::one_at_a_time:
      return HASHKIT_HASH_DEFAULT;
    case HashFunction::md5:
      return HASHKIT_HASH_MD5;
    case HashFunction::crc32:
      return HASHKIT_HASH_CRC;
    case HashFunction::fnv1_64:
      return HASHKIT_HASH_FNV1_64;
    case HashFunction::fnv1a_64:
      return HASHKIT_HASH_FNV1A_64;
    case HashFunction::fnv1_32:
      return HASHKIT_HASH_FNV1_32;
    case HashFunction::fnv1a_32:
      return HASHKIT_HASH_FNV1A_32;
    case HashFunction::murmur:
      return HASHKIT_HASH_MURMUR;
    case HashFunction::jenkins:
      return HASHKIT_HASH_JENKINS;
    default:
      return HASHKIT_HASH_MAX;
  }
}

// Where libhashkit has the function, it gives twemproxy's values for any
// bytes; md5 here goes through OpenSSL, so this also checks that path.
TEST(Hash, AgreesWithLibhashkitOnRandomKeys) {
  testing::Random random(5);
  for (HashFunction f : kAllHashFunctions) {
    hashkit_hash_algorithm_t algorithm = libhashkit_algorithm(f);
    if (algorithm == HASHKIT_HASH_MAX) {
      continue;
    }
    for (int i = 0; i < 2000; ++i) {
      std::string key = random.key();
      ASSERT_EQ(hash(f, key), libhashkit_digest(key.data(), key.size(), algorithm))
          << hash_name(f) << " '" << key << "'";
    }
  }
}

// Debian's libhashkit is built without hsieh, which is why memshard has its
// own. If this starts failing, libhashkit grew hsieh: compare it then.
// hash_max() is each function's real range: no key hashes above it, and
// keys come close to it (within 1/64 of the range).
TEST(Hash, MaxIsTheRealRange) {
  testing::Random random(27);
  std::vector<std::string> keys;
  for (int i = 0; i < 100000; ++i) keys.push_back(random.key() + "-" + std::to_string(i));
  for (HashFunction f : kAllHashFunctions) {
    SCOPED_TRACE(std::string(hash_name(f)));
    uint32_t highest = 0;
    for (const std::string& k : keys) highest = std::max(highest, hash(f, k));
    EXPECT_LE(highest, hash_max(f));
    EXPECT_GE(highest, hash_max(f) - hash_max(f) / 64);
  }
  EXPECT_EQ(hash_max(HashFunction::crc32), 32767u);
}

TEST(Hash, DebianLibhashkitLacksHsieh) {
  EXPECT_FALSE(libhashkit_has_algorithm(HASHKIT_HASH_HSIEH));
}

TEST(Hash, Md5Digest) {
  unsigned char digest[16];
  md5_digest("", digest);
  const unsigned char empty[16] = {0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04,
                                   0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8, 0x42, 0x7e};
  EXPECT_EQ(std::memcmp(digest, empty, 16), 0);
}

TEST(Hash, Names) {
  for (HashFunction f : kAllHashFunctions) {
    EXPECT_EQ(parse_hash_name(hash_name(f)), f);
  }
  EXPECT_EQ(hash_name(HashFunction::fnv1a_64), "fnv1a_64");
  EXPECT_EQ(hash_name(HashFunction::one_at_a_time), "one_at_a_time");
  EXPECT_EQ(parse_hash_name("FNV1A_64"), std::nullopt);
  EXPECT_EQ(parse_hash_name("murmur3"), std::nullopt);
  EXPECT_EQ(parse_hash_name(""), std::nullopt);
}

TEST(RingNames, ModeAndDistributionNames) {
  for (Mode m : {Mode::twemproxy, Mode::libmemcached_weighted, Mode::libmemcached,
                 Mode::libmemcached_spy, Mode::libketama, Mode::spymemcached}) {
    EXPECT_EQ(parse_mode_name(mode_name(m)), m);
  }
  for (Distribution d : {Distribution::ketama, Distribution::modula, Distribution::random}) {
    EXPECT_EQ(parse_distribution_name(distribution_name(d)), d);
  }
  EXPECT_EQ(parse_mode_name("nutcracker"), std::nullopt);
  EXPECT_EQ(parse_distribution_name("vnode"), std::nullopt);
  EXPECT_EQ(testing::server("10.0.0.1", 22122).address(), "10.0.0.1:22122");
  EXPECT_EQ(testing::unix_socket("/tmp/m.sock").address(), "/tmp/m.sock");
}

}  // namespace
}  // namespace memshard::ketama
