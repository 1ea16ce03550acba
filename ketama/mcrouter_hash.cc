#include "ketama/mcrouter_hash.h"

#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "ketama/hash_internal.h"

namespace memshard::ketama {
namespace {

uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr uint64_t kMurmurMultiplier = 0xc6a4a7935bd1e995ULL;
constexpr int kMurmurShift = 47;

uint64_t murmur_mix(uint64_t k) {
  k *= kMurmurMultiplier;
  k ^= k >> kMurmurShift;
  return k * kMurmurMultiplier;
}

uint64_t murmur_finish(uint64_t h) {
  h ^= h >> kMurmurShift;
  h *= kMurmurMultiplier;
  return h ^ (h >> kMurmurShift);
}

// furc_hash's seed, and how far apart the bits of one attempt are read
// (which is what bounds the pool at 2^23).
constexpr uint64_t kFurcSeed = 4193360111u;
constexpr uint32_t kFurcShift = 23;
constexpr int kFurcAttempts = 32;

// The stream of pseudo-random bits furc_hash reads: word 0 is the key's
// MurmurHash64A, word n that of word n-1's eight bytes, bit i is bit
// (i % 64) of word i / 64. Words are made as they are first needed.
class FurcBits {
 public:
  explicit FurcBits(std::string_view key) : key_(key) {}

  uint32_t at(uint32_t index) {
    const uint32_t word = index >> 6;
    while (made_ <= word) {
      if (made_ == 0) {
        words_[0] = murmur_hash_64a(key_, kFurcSeed);
      } else {
        // MurmurHash64A of one 8-byte word.
        const uint64_t h = (kFurcSeed ^ (8 * kMurmurMultiplier)) ^ murmur_mix(words_[made_ - 1]);
        words_[made_] = murmur_finish(h * kMurmurMultiplier);
      }
      ++made_;
    }
    return static_cast<uint32_t>(words_[word] >> (index & 63)) & 1u;
  }

 private:
  std::string_view key_;
  // An index stays below 32 + 32 attempts * 32 bits * 23 apart: word 368.
  std::array<uint64_t, 512> words_;
  uint32_t made_ = 0;
};

// SpookyHash V2 (Bob Jenkins). State words and rotations as its Mix,
// EndPartial, ShortMix and ShortEnd steps define them.
constexpr uint64_t kSpookyConst = 0xdeadbeefdeadbeefULL;
constexpr size_t kSpookyWords = 12;
constexpr size_t kSpookyBlock = kSpookyWords * 8;  // 96 bytes
constexpr size_t kSpookyShortLimit = 2 * kSpookyBlock;

void spooky_mix(const unsigned char* block, std::array<uint64_t, kSpookyWords>& s) {
  constexpr int kRot[kSpookyWords] = {11, 32, 43, 31, 17, 28, 39, 57, 55, 54, 22, 46};
  for (size_t i = 0; i < kSpookyWords; ++i) {
    s[i] += load_le64(block + 8 * i);
    s[(i + 2) % 12] ^= s[(i + 10) % 12];
    s[(i + 11) % 12] ^= s[i];
    s[i] = std::rotl(s[i], kRot[i]);
    s[(i + 11) % 12] += s[(i + 1) % 12];
  }
}

void spooky_end_partial(std::array<uint64_t, kSpookyWords>& h) {
  constexpr int kRot[kSpookyWords] = {44, 15, 34, 21, 38, 33, 10, 13, 38, 53, 42, 54};
  for (size_t i = 0; i < kSpookyWords; ++i) {
    h[(i + 11) % 12] += h[(i + 1) % 12];
    h[(i + 2) % 12] ^= h[(i + 11) % 12];
    h[(i + 1) % 12] = std::rotl(h[(i + 1) % 12], kRot[i]);
  }
}

void spooky_short_mix(std::array<uint64_t, 4>& h) {
  constexpr int kRot[12] = {50, 52, 30, 41, 54, 48, 38, 37, 62, 34, 5, 36};
  for (size_t j = 0; j < 12; ++j) {
    uint64_t& x = h[(j + 2) % 4];
    x = std::rotl(x, kRot[j]);
    x += h[(j + 3) % 4];
    h[j % 4] ^= x;
  }
}

void spooky_short_end(std::array<uint64_t, 4>& h) {
  constexpr int kRot[11] = {15, 52, 26, 51, 28, 9, 47, 54, 32, 25, 63};
  for (size_t j = 0; j < 11; ++j) {
    uint64_t& t = h[(j + 3) % 4];
    uint64_t& s = h[(j + 2) % 4];
    t ^= s;
    s = std::rotl(s, kRot[j]);
    t += s;
  }
}

// Messages under 192 bytes: 32 bytes per ShortMix round, then the last 0
// to 31 bytes and the length.
uint64_t spooky_short(const unsigned char* p, size_t length, uint64_t seed1, uint64_t seed2) {
  std::array<uint64_t, 4> h = {seed1, seed2, kSpookyConst, kSpookyConst};
  size_t left = length;
  if (length > 15) {
    for (; left >= 32; left -= 32, p += 32) {
      h[2] += load_le64(p);
      h[3] += load_le64(p + 8);
      spooky_short_mix(h);
      h[0] += load_le64(p + 16);
      h[1] += load_le64(p + 24);
    }
    if (left >= 16) {
      h[2] += load_le64(p);
      h[3] += load_le64(p + 8);
      spooky_short_mix(h);
      p += 16;
      left -= 16;
    }
  }
  h[3] += static_cast<uint64_t>(length) << 56;
  if (left == 0) {
    h[2] += kSpookyConst;
    h[3] += kSpookyConst;
  } else {
    // The last 1 to 15 bytes, little-endian: the first eight into the
    // third word, the rest into the fourth.
    unsigned char tail[16] = {};
    std::memcpy(tail, p, left);
    h[2] += load_le64(tail);
    h[3] += load_le64(tail + 8);
  }
  spooky_short_end(h);
  return h[0];
}

uint64_t spooky_long(const unsigned char* p, size_t length, uint64_t seed1, uint64_t seed2) {
  std::array<uint64_t, kSpookyWords> h;
  for (size_t i = 0; i < kSpookyWords; ++i) {
    h[i] = i % 3 == 0 ? seed1 : i % 3 == 1 ? seed2 : kSpookyConst;
  }
  const size_t whole = length / kSpookyBlock;
  for (size_t b = 0; b < whole; ++b) spooky_mix(p + b * kSpookyBlock, h);
  // The last partial block, zero-padded, its length in its last byte.
  unsigned char last[kSpookyBlock] = {};
  const size_t left = length - whole * kSpookyBlock;
  std::memcpy(last, p + whole * kSpookyBlock, left);
  last[kSpookyBlock - 1] = static_cast<unsigned char>(left);
  for (size_t i = 0; i < kSpookyWords; ++i) h[i] += load_le64(last + 8 * i);
  for (int round = 0; round < 3; ++round) spooky_end_partial(h);
  return h[0];
}

constexpr uint32_t kWeightedCh3Seed = 0xface2014;
constexpr size_t kWeightedCh3Attempts = 32;

}  // namespace

uint64_t murmur_hash_64a(std::string_view key, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const size_t len = key.size();
  uint64_t h = seed ^ (len * kMurmurMultiplier);
  const size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    h ^= murmur_mix(load_le64(p + 8 * i));
    h *= kMurmurMultiplier;
  }
  const size_t tail = len & 7;
  if (tail != 0) {
    uint64_t t = 0;
    for (size_t i = tail; i-- > 0;) t = (t << 8) | p[8 * words + i];
    h ^= t;
    h *= kMurmurMultiplier;
  }
  return murmur_finish(h);
}

uint32_t furc_hash(std::string_view key, uint32_t m) {
  if (m <= 1) return 0;
  FurcBits bits(key);
  // d: how many bits an index below m takes.
  uint32_t d = 32u - static_cast<uint32_t>(std::countl_zero(m - 1u));
  uint32_t a = d;
  for (int attempt = 0; attempt < kFurcAttempts; ++attempt) {
    // The leading 1 of the index: its bit's position comes down until a
    // bit of the stream says it is there.
    while (bits.at(a) == 0) {
      if (--d == 0) return 0;
      a = d;
    }
    a += kFurcShift;
    uint32_t index = 1;
    for (uint32_t i = 1; i < d; ++i) {
      index = (index << 1) | bits.at(a);
      a += kFurcShift;
    }
    if (index < m) return index;
  }
  return 0;
}

uint32_t spooky_hash_v2_32(std::string_view data, uint32_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const uint64_t h = data.size() < kSpookyShortLimit ? spooky_short(p, data.size(), seed, seed)
                                                     : spooky_long(p, data.size(), seed, seed);
  return static_cast<uint32_t>(h);
}

size_t weighted_ch3(std::string_view key, std::span<const double> weights) {
  const auto n = static_cast<uint32_t>(weights.size());
  // Keys and their salts: on the stack for any key memcached takes.
  char stack[320];
  std::string heap;
  char* salted = nullptr;
  std::string_view tried = key;
  size_t index = 0;
  for (size_t attempt = 0; attempt < kWeightedCh3Attempts; ++attempt) {
    index = furc_hash(tried, n);
    const uint64_t p = spooky_hash_v2_32(tried, kWeightedCh3Seed);
    // As mcrouter: the weight times 2^32-1 in double, truncated.
    const auto w = static_cast<uint64_t>(weights[index] * 4294967295.0);
    if (p < w) return index;
    if (salted == nullptr) {
      constexpr size_t kMaxSalt = 20;
      if (key.size() + kMaxSalt <= sizeof(stack)) {
        salted = stack;
      } else {
        heap.resize(key.size() + kMaxSalt);
        salted = heap.data();
      }
      if (!key.empty()) std::memcpy(salted, key.data(), key.size());
    }
    size_t salt_length = 0;
    size_t s = attempt;
    do {
      salted[key.size() + salt_length++] = static_cast<char>('0' + s % 10);
      s /= 10;
    } while (s > 0);
    tried = std::string_view(salted, key.size() + salt_length);
  }
  return index;
}

size_t mcrouter_crc32(std::string_view key, size_t n) {
  // mcrouter's crc32_hash is the standard CRC-32, as twemproxy's crc32a.
  return (detail::crc32a(key) & 0x7fffffffu) % n;
}

}  // namespace memshard::ketama
