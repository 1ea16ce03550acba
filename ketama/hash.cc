// Dispatch to the twelve key hashes. libhashkit (libmemcached's hash library,
// from which twemproxy's hashkit was copied) computes the same values as
// twemproxy for one_at_a_time, crc32, the four fnv variants, murmur and
// jenkins, including keys with bytes >= 0x80 (both read them as signed char),
// so those come from it. md5 goes through OpenSSL; crc16, crc32a and hsieh
// are memshard's own (see hash_internal.h for why).
#include "ketama/hash.h"

#include <libhashkit-1.0/hashkit.h>
#include <openssl/evp.h>

#include <array>
#include <memory>
#include <stdexcept>

#include "ketama/hash_internal.h"

namespace memshard::ketama {
namespace {

constexpr std::array<std::string_view, 12> kNames = {
    "one_at_a_time", "md5",     "crc16",    "crc32", "crc32a", "fnv1_64",
    "fnv1a_64",      "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins",
};

size_t name_index(HashFunction f) {
  switch (f) {
    case HashFunction::one_at_a_time:
      return 0;
    case HashFunction::md5:
      return 1;
    case HashFunction::crc16:
      return 2;
    case HashFunction::crc32:
      return 3;
    case HashFunction::crc32a:
      return 4;
    case HashFunction::fnv1_64:
      return 5;
    case HashFunction::fnv1a_64:
      return 6;
    case HashFunction::fnv1_32:
      return 7;
    case HashFunction::fnv1a_32:
      return 8;
    case HashFunction::hsieh:
      return 9;
    case HashFunction::murmur:
      return 10;
    case HashFunction::jenkins:
      return 11;
  }
  throw std::invalid_argument("unknown HashFunction");
}

// Fetching the MD5 implementation is a provider lookup in OpenSSL 3; do it
// once, not per key.
const EVP_MD* md5_algorithm() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "MD5", nullptr);
    if (fetched == nullptr) {
      throw std::runtime_error("OpenSSL has no MD5 implementation");
    }
    return fetched;
  }();
  return md;
}

// One digest context per thread, reused, so that hashing a key with MD5
// allocates nothing.
EVP_MD_CTX* thread_md5_context() {
  struct ContextDeleter {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, ContextDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx) {
    throw std::runtime_error("EVP_MD_CTX_new failed");
  }
  return ctx.get();
}

uint32_t md5_first_word(std::string_view key) {
  unsigned char digest[16];
  md5_digest(key, digest);
  // Little-endian uint32 of the first four bytes, as twemproxy's hash_md5.
  return static_cast<uint32_t>(digest[0]) | (static_cast<uint32_t>(digest[1]) << 8) |
         (static_cast<uint32_t>(digest[2]) << 16) | (static_cast<uint32_t>(digest[3]) << 24);
}

}  // namespace

void md5_digest(std::string_view data, unsigned char out[16]) {
  EVP_MD_CTX* ctx = thread_md5_context();
  unsigned int length = 0;
  if (EVP_DigestInit_ex(ctx, md5_algorithm(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, out, &length) != 1 || length != 16) {
    throw std::runtime_error("OpenSSL MD5 failed");
  }
}

uint32_t hash(HashFunction f, std::string_view key) {
  // libhashkit dereferences the pointer even for an empty key.
  const char* k = key.empty() ? "" : key.data();
  size_t n = key.size();
  switch (f) {
    case HashFunction::one_at_a_time:
      return libhashkit_one_at_a_time(k, n);
    case HashFunction::md5:
      return md5_first_word(key);
    case HashFunction::crc16:
      return detail::crc16(key);
    case HashFunction::crc32:
      return libhashkit_crc32(k, n);
    case HashFunction::crc32a:
      return detail::crc32a(key);
    case HashFunction::fnv1_64:
      return libhashkit_fnv1_64(k, n);
    case HashFunction::fnv1a_64:
      return libhashkit_fnv1a_64(k, n);
    case HashFunction::fnv1_32:
      return libhashkit_fnv1_32(k, n);
    case HashFunction::fnv1a_32:
      return libhashkit_fnv1a_32(k, n);
    case HashFunction::hsieh:
      return detail::hsieh(key);
    case HashFunction::murmur:
      return libhashkit_murmur(k, n);
    case HashFunction::jenkins:
      return libhashkit_jenkins(k, n);
  }
  throw std::invalid_argument("unknown HashFunction");
}

uint32_t hash_max(HashFunction f) {
  // Every case is listed so that a new function cannot be added without
  // deciding its range (-Wswitch). hash_test.cc checks each against real
  // outputs.
  switch (f) {
    case HashFunction::crc32:
      // libhashkit keeps bits 16..30 of the CRC, as libmemcached always has,
      // and twemproxy copied it.
      return 0x7fff;
    case HashFunction::crc16:
      // Unmasked in nutcracker 0.5 (hash_crc16.cc): 32 bits once a key has
      // 4 bytes, so not the 16-bit trap its name suggests.
    case HashFunction::one_at_a_time:
    case HashFunction::md5:
    case HashFunction::crc32a:
    case HashFunction::fnv1_64:
    case HashFunction::fnv1a_64:
    case HashFunction::fnv1_32:
    case HashFunction::fnv1a_32:
    case HashFunction::hsieh:
    case HashFunction::murmur:
    case HashFunction::jenkins:
      return UINT32_MAX;
  }
  throw std::invalid_argument("unknown HashFunction");
}

std::string_view hash_name(HashFunction f) {
  return kNames[name_index(f)];
}

std::optional<HashFunction> parse_hash_name(std::string_view name) {
  for (HashFunction f : kAllHashFunctions) {
    if (hash_name(f) == name) {
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace memshard::ketama
