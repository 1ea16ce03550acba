#include "proxy/protocol/base64.h"

#include <array>
#include <cstdint>

namespace memshard::proto {
namespace {

constexpr uint8_t kNotInAlphabet = 0xff;
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<uint8_t, 256> make_sextets() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) v = kNotInAlphabet;
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<uint8_t>(i);
  }
  return table;
}

constexpr std::array<uint8_t, 256> kSextets = make_sextets();

uint8_t sextet(char c) {
  return kSextets[static_cast<unsigned char>(c)];
}

// Appends the three bytes of a group of four sextets.
void append_group(const uint8_t (&s)[4], std::string& out) {
  out.push_back(static_cast<char>((s[0] << 2) | (s[1] >> 4)));
  out.push_back(static_cast<char>(((s[1] & 0x0f) << 4) | (s[2] >> 2)));
  out.push_back(static_cast<char>(((s[2] & 0x03) << 6) | s[3]));
}

}  // namespace

// Strict RFC 4648 section 4: whole groups of four, '=' only as the last one
// or two characters, and zero pad bits (the canonical encoding, so every
// key has exactly one accepted spelling).
bool base64_decode(std::string_view in, std::string& out) {
  out.clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  size_t pad = 0;
  if (in.back() == '=') pad = in[in.size() - 2] == '=' ? 2 : 1;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    uint8_t s[4];
    for (size_t j = 0; j < 4; ++j) {
      const bool is_pad = last && j >= 4 - pad;
      s[j] = is_pad ? 0 : sextet(in[i + j]);
      if (s[j] == kNotInAlphabet) return false;
    }
    append_group(s, out);
  }
  if (pad == 1 && (sextet(in[in.size() - 2]) & 0x03) != 0) return false;
  if (pad == 2 && (sextet(in[in.size() - 3]) & 0x0f) != 0) return false;
  out.resize(out.size() - pad);
  return true;
}

bool memcached_base64_decode(std::string_view in, std::string& out) {
  out.clear();
  size_t symbols = 0;
  for (char c : in) symbols += (sextet(c) != kNotInAlphabet || c == '=') ? 1 : 0;
  if (symbols == 0 || symbols % 4 != 0) return false;
  out.reserve(symbols / 4 * 3);
  uint8_t group[4];
  size_t filled = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '=') {
      ++pad;
      group[filled++] = 0;
    } else if (sextet(c) != kNotInAlphabet) {
      group[filled++] = sextet(c);
    } else {
      continue;
    }
    if (filled < 4) continue;
    filled = 0;
    append_group(group, out);
    if (pad == 0) continue;
    if (pad > 2) return false;
    out.resize(out.size() - pad);
    break;
  }
  return true;
}

void base64_encode(std::string_view in, std::string& out) {
  size_t i = 0;
  auto byte = [&](size_t j) { return static_cast<uint32_t>(static_cast<unsigned char>(in[j])); };
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(v >> shift) & 0x3f]);
  }
  const size_t rest = in.size() - i;
  if (rest == 0) return;
  const uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
  out.push_back(kAlphabet[(v >> 18) & 0x3f]);
  out.push_back(kAlphabet[(v >> 12) & 0x3f]);
  out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 0x3f] : '=');
  out.push_back('=');
}

}  // namespace memshard::proto
