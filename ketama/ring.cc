#include "ketama/ring.h"

#include <algorithm>
#include <bit>
#include <random>
#include <stdexcept>

#include "ketama/continuum.h"
#include "ketama/mcrouter_hash.h"
#include "ketama/ring_names.h"

namespace memshard::ketama {

namespace {

// The point values alone, so the search touches 4 bytes per step, and a
// table of where each range of values starts, so it only searches a few
// points: bucket_start[b] is the index of the first point >= b << shift.
struct SearchIndex {
  std::vector<uint32_t> values;
  std::vector<uint32_t> bucket_start;
  unsigned shift = 31;

  explicit SearchIndex(const std::vector<Point>& points = {}) {
    values.reserve(points.size());
    for (const Point& p : points) {
      values.push_back(p.value);
    }
    // About one bucket per point, at most 2^16 buckets (256 KiB).
    unsigned bits = std::clamp(static_cast<unsigned>(std::bit_width(points.size())), 1u, 16u);
    shift = 32 - bits;
    size_t buckets = size_t{1} << bits;
    bucket_start.resize(buckets + 1);
    size_t i = 0;
    for (size_t b = 0; b < buckets; ++b) {
      uint64_t bucket_low = static_cast<uint64_t>(b) << shift;
      while (i < values.size() && values[i] < bucket_low) {
        ++i;
      }
      bucket_start[b] = static_cast<uint32_t>(i);
    }
    bucket_start[buckets] = static_cast<uint32_t>(values.size());
  }

  // Index of the first value >= h, values.size() when there is none.
  size_t lower_bound(uint32_t h) const {
    size_t bucket = h >> shift;
    const uint32_t* first = values.data() + bucket_start[bucket];
    const uint32_t* last = values.data() + bucket_start[bucket + 1];
    return static_cast<size_t>(std::lower_bound(first, last, h) - values.data());
  }
};

}  // namespace

struct Ring::State {
  std::vector<ServerEntry> servers;
  RingOptions options;
  std::vector<bool> live;
  size_t live_count = 0;
  std::vector<std::string> names;

  // ketama distribution
  std::vector<Point> points;
  std::vector<size_t> point_counts;
  SearchIndex index;
  // twemproxy sends every key of a one-server pool to it without hashing.
  bool single_server = false;

  // modula, random and mcrouter's distributions
  std::vector<uint32_t> slots;
  // wch3: the weight (0 to 1) of each slot's server
  std::vector<double> slot_weights;
};

namespace {

bool hashes_with_pool_hash(Mode m) {
  return m == Mode::twemproxy || m == Mode::libmemcached || m == Mode::libmemcached_spy;
}

// twemproxy's hash_tag: with "{}" and key "user:{42}:name", only "42" is
// hashed. The tag must open, then close strictly later with something in
// between; otherwise the whole key is used. Only the first opening character
// is considered.
std::string_view apply_hash_tag(std::string_view key, const std::string& tag) {
  if (tag.empty()) {
    return key;
  }
  size_t open = key.find(tag[0]);
  if (open == std::string_view::npos) {
    return key;
  }
  size_t close = key.find(tag[1], open + 1);
  if (close == std::string_view::npos || close - open <= 1) {
    return key;
  }
  return key.substr(open + 1, close - open - 1);
}

// wch3: an attempt picks each index with probability 1/L and keeps it with
// its weight w; a = mean weight keeps an attempt. After 32 attempts the
// last index stands, kept or not. So index i owns
//   w_i / L * (1 + (1-a) + ... + (1-a)^31)  +  (1-a)^31 * (1 - w_i) / L
// of the keys: the expectation for keys whose hashes are independent.
// Rounded to whole values summing to 2^32.
std::vector<uint64_t> wch3_expected_owned(size_t servers, const std::vector<uint32_t>& slots,
                                          const std::vector<double>& weights) {
  std::vector<uint64_t> owned(servers, 0);
  const size_t length = slots.size();
  if (length == 0) return owned;
  double mean = 0;
  for (double w : weights) mean += w;
  mean /= static_cast<double>(length);
  double kept_series = 0;  // 1 + (1-a) + ... + (1-a)^31
  double miss = 1;         // (1-a)^t
  for (int t = 0; t < 32; ++t) {
    kept_series += miss;
    if (t < 31) miss *= 1 - mean;
  }
  const double space = static_cast<double>(kHashSpace);
  uint64_t given = 0;
  for (size_t j = 0; j < length; ++j) {
    const double share =
        (weights[j] * kept_series + miss * (1 - weights[j])) / static_cast<double>(length);
    const auto values = std::min(static_cast<uint64_t>(share * space), kHashSpace - given);
    owned[slots[j]] += values;
    given += values;
  }
  // What rounding left over: one value each from the first slot on.
  for (size_t j = 0; given < kHashSpace; j = (j + 1) % length, ++given) ++owned[slots[j]];
  return owned;
}

size_t random_index(size_t n) {
  thread_local std::minstd_rand rng(std::random_device{}());
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

// modula: each live server `weight` times, in the mode's server order
// (twemproxy: sorted by name; the others: list order). random: each live
// server once. ch3, wch3, crc32: each live server once, in list order (the
// index mcrouter's hash picks).
std::vector<uint32_t> build_slots(const std::vector<ServerEntry>& servers,
                                  const std::vector<std::string>& names,
                                  const std::vector<bool>& live, const RingOptions& options) {
  std::vector<uint32_t> order;
  if (options.mode == Mode::twemproxy && !is_mcrouter_distribution(options.distribution)) {
    order = detail::twemproxy_order(names);
  } else {
    for (uint32_t i = 0; i < servers.size(); ++i) {
      order.push_back(i);
    }
  }
  std::vector<uint32_t> slots;
  for (uint32_t i : order) {
    if (!live[i]) {
      continue;
    }
    uint32_t copies = options.distribution == Distribution::modula ? servers[i].weight : 1;
    slots.insert(slots.end(), copies, i);
  }
  return slots;
}

}  // namespace

Ring Ring::build(std::vector<ServerEntry> servers, RingOptions options, std::vector<bool> live) {
  if (servers.empty()) {
    throw std::invalid_argument("a ring needs at least one server");
  }
  if (!options.hash_tag.empty() && options.hash_tag.size() != 2) {
    throw std::invalid_argument("hash_tag must be empty or exactly two characters");
  }
  if (!live.empty() && live.size() != servers.size()) {
    throw std::invalid_argument("live must be empty or have one entry per server");
  }
  if (servers.size() > std::numeric_limits<uint32_t>::max() / 2) {
    throw std::invalid_argument("too many servers");
  }
  if (is_mcrouter_distribution(options.distribution) && servers.size() > kFurcMaxPoolSize) {
    throw std::invalid_argument("ch3, wch3 and crc32 take at most 8388608 servers");
  }
  if (options.distribution == Distribution::wch3) {
    for (const ServerEntry& server : servers) {
      if (!(server.fraction >= 0 && server.fraction <= 1)) {
        throw std::invalid_argument("distribution wch3 takes weights from 0 to 1");
      }
    }
  }

  auto s = std::make_shared<State>();
  s->servers = std::move(servers);
  s->options = std::move(options);
  s->live = live.empty() ? std::vector<bool>(s->servers.size(), true) : std::move(live);
  s->live_count = static_cast<size_t>(std::count(s->live.begin(), s->live.end(), true));
  for (const ServerEntry& server : s->servers) {
    s->names.push_back(detail::ring_name_for(s->options.mode, server));
  }

  if (s->options.distribution == Distribution::ketama) {
    detail::Continuum c = detail::build_continuum(s->servers, s->names, s->live, s->options);
    s->points = std::move(c.points);
    s->point_counts = std::move(c.point_counts);
    s->single_server = s->options.mode == Mode::twemproxy && s->servers.size() == 1;
  } else {
    s->point_counts.assign(s->servers.size(), 0);
    s->slots = build_slots(s->servers, s->names, s->live, s->options);
    if (s->options.distribution == Distribution::wch3) {
      for (uint32_t server : s->slots) s->slot_weights.push_back(s->servers[server].fraction);
    }
  }
  s->index = SearchIndex(s->points);
  return Ring(std::move(s));
}

Ring Ring::none(RingOptions options) {
  auto s = std::make_shared<State>();
  s->options = std::move(options);
  s->index = SearchIndex(s->points);
  return Ring(std::move(s));
}

namespace {

// mcrouter hashes a key's "routing key": the key up to its first "|#|".
std::string_view before_hash_stop(std::string_view key) {
  const size_t stop = key.find("|#|");
  return stop == std::string_view::npos ? key : key.substr(0, stop);
}

}  // namespace

uint32_t Ring::hash_key(std::string_view key) const {
  key = apply_hash_tag(key, s_->options.hash_tag);
  if (is_mcrouter_distribution(s_->options.distribution)) {
    return mcrouter_index(before_hash_stop(key));
  }
  // twemproxy's server_pool_hash() returns 0 for an empty key unhashed.
  if (s_->options.mode == Mode::twemproxy && key.empty()) {
    return 0;
  }
  return hash(key_hash_function(), key);
}

uint32_t Ring::mcrouter_index(std::string_view key) const {
  const State& s = *s_;
  const size_t n = s.slots.size();
  if (n == 0) return 0;
  // The salt follows the key: on the stack for any key memcached takes.
  char stack[512];
  std::string heap;
  std::string_view hashed = key;
  if (!s.options.hash_salt.empty()) {
    const size_t length = key.size() + s.options.hash_salt.size();
    char* out = stack;
    if (length > sizeof(stack)) {
      heap.resize(length);
      out = heap.data();
    }
    std::copy(key.begin(), key.end(), out);
    std::copy(s.options.hash_salt.begin(), s.options.hash_salt.end(), out + key.size());
    hashed = std::string_view(out, length);
  }
  switch (s.options.distribution) {
    case Distribution::ch3:
      return furc_hash(hashed, static_cast<uint32_t>(n));
    case Distribution::wch3:
      return static_cast<uint32_t>(weighted_ch3(hashed, s.slot_weights));
    case Distribution::crc32:
      return static_cast<uint32_t>(mcrouter_crc32(hashed, n));
    case Distribution::ketama:
    case Distribution::modula:
    case Distribution::random:
      break;
  }
  return 0;
}

std::string_view Ring::key_hash_name() const {
  switch (s_->options.distribution) {
    case Distribution::ch3:
    case Distribution::wch3:
      return "furc_hash";
    case Distribution::crc32:
      return "mcrouter_crc32";
    case Distribution::ketama:
    case Distribution::modula:
    case Distribution::random:
      break;
  }
  return hash_name(key_hash_function());
}

HashFunction Ring::key_hash_function() const {
  return hashes_with_pool_hash(s_->options.mode) ? s_->options.hash : HashFunction::md5;
}

size_t Ring::server_for_hash(uint32_t h) const {
  const State& s = *s_;
  if (s.live_count == 0) {
    return npos;
  }
  switch (s.options.distribution) {
    case Distribution::ketama: {
      if (s.single_server) {
        return 0;
      }
      if (s.points.empty()) {
        return npos;
      }
      size_t i = s.index.lower_bound(h);
      // Past the last point: wrap around to the first.
      return s.points[i == s.points.size() ? 0 : i].server;
    }
    case Distribution::modula:
    case Distribution::ch3:
    case Distribution::wch3:
    case Distribution::crc32:
      // mcrouter's: the hash is the slot's index already.
      return s.slots.empty() ? npos : s.slots[h % s.slots.size()];
    case Distribution::random:
      return s.slots[random_index(s.slots.size())];
  }
  return npos;
}

size_t Ring::lookup(std::string_view key) const {
  const State& s = *s_;
  if (s.live_count == 0) {
    return npos;
  }
  if (s.single_server || s.options.distribution == Distribution::random) {
    return server_for_hash(0);  // the key plays no part
  }
  return server_for_hash(hash_key(key));
}

std::vector<size_t> Ring::preference_list(std::string_view key, size_t n) const {
  std::vector<size_t> result(std::min(n, s_->live_count));
  result.resize(preference_list(key, std::span<size_t>(result)));
  return result;
}

size_t Ring::preference_list(std::string_view key, std::span<size_t> out) const {
  // lookup() hashes no key for these; neither does the list.
  if (s_->single_server || s_->options.distribution == Distribution::random) {
    return preference_list_for_hash(0, out);
  }
  return preference_list_for_hash(hash_key(key), out);
}

size_t Ring::preference_list_for_hash(uint32_t hash, std::span<size_t> out) const {
  const State& s = *s_;
  size_t owner = server_for_hash(hash);
  if (owner == npos || out.empty()) return 0;
  const size_t n = std::min(out.size(), s.live_count);
  size_t filled = 0;
  // n is a handful of copies: a scan of what was taken beats a bitmap.
  auto take = [&](size_t server) {
    for (size_t i = 0; i < filled; ++i) {
      if (out[i] == server) return;
    }
    out[filled++] = server;
  };
  take(owner);
  if (s.options.distribution == Distribution::ketama && !s.single_server) {
    // Walk clockwise from the hash's point.
    size_t start = s.index.lower_bound(hash);
    for (size_t step = 0; step < s.points.size() && filled < n; ++step) {
      take(s.points[(start + step) % s.points.size()].server);
    }
  } else if (!s.slots.empty()) {
    size_t start = std::find(s.slots.begin(), s.slots.end(), owner) - s.slots.begin();
    if (s.options.distribution == Distribution::modula ||
        is_mcrouter_distribution(s.options.distribution)) {
      start = hash % s.slots.size();
    }
    for (size_t step = 0; step < s.slots.size() && filled < n; ++step) {
      take(s.slots[(start + step) % s.slots.size()]);
    }
  }
  return filled;
}

const std::vector<ServerEntry>& Ring::servers() const {
  return s_->servers;
}
const RingOptions& Ring::options() const {
  return s_->options;
}
bool Ring::is_live(size_t server) const {
  return s_->live.at(server);
}
const std::string& Ring::ring_name(size_t server) const {
  return s_->names.at(server);
}
const std::vector<Point>& Ring::points() const {
  return s_->points;
}
size_t Ring::point_count(size_t server) const {
  return s_->point_counts.at(server);
}
const std::vector<uint32_t>& Ring::slots() const {
  return s_->slots;
}

std::vector<Arc> Ring::arcs() const {
  const State& s = *s_;
  std::vector<Arc> arcs;
  if (s.options.distribution != Distribution::ketama || s.live_count == 0) {
    return arcs;
  }
  if (s.single_server) {
    arcs.push_back({UINT32_MAX, 0});
    return arcs;
  }
  if (s.points.empty()) {
    return arcs;
  }
  // Point i owns (point i-1, point i]; the first point also owns the values
  // above the last point (wrap-around). A point equal to its predecessor
  // owns nothing: the search always stops at the first of them.
  uint32_t first_owner = s.points.front().server;
  for (size_t i = 0; i < s.points.size(); ++i) {
    if (i > 0 && s.points[i].value == s.points[i - 1].value) {
      continue;
    }
    arcs.push_back({s.points[i].value, s.points[i].server});
  }
  if (arcs.back().last != UINT32_MAX) {
    arcs.push_back({UINT32_MAX, first_owner});
  }
  return arcs;
}

std::vector<uint64_t> Ring::owned_hashes() const {
  const State& s = *s_;
  std::vector<uint64_t> owned(s.servers.size(), 0);
  switch (s.options.distribution) {
    case Distribution::ketama: {
      uint64_t previous_end = 0;  // one past the previous arc
      for (const Arc& arc : arcs()) {
        owned[arc.server] += uint64_t{arc.last} + 1 - previous_end;
        previous_end = uint64_t{arc.last} + 1;
      }
      break;
    }
    case Distribution::modula: {
      // Slot j receives the values v < 2^32 with v % L == j:
      // floor((2^32 - 1 - j) / L) + 1 of them.
      uint64_t length = s.slots.size();
      for (uint64_t j = 0; j < length && j < kHashSpace; ++j) {
        owned[s.slots[j]] += (kHashSpace - 1 - j) / length + 1;
      }
      break;
    }
    case Distribution::random:
    case Distribution::ch3: {
      // furc_hash spreads keys evenly over the indexes.
      uint64_t length = s.slots.size();
      for (uint64_t j = 0; j < length; ++j) {
        owned[s.slots[j]] += kHashSpace / length + (j < kHashSpace % length ? 1 : 0);
      }
      break;
    }
    case Distribution::crc32: {
      // 31 bits of CRC modulo the slots: index j takes the values
      // v < 2^31 with v % L == j, each counted twice to fill 2^32.
      const uint64_t values = kHashSpace / 2;
      const uint64_t length = s.slots.size();
      for (uint64_t j = 0; j < length && j < values; ++j) {
        owned[s.slots[j]] += 2 * ((values - 1 - j) / length + 1);
      }
      break;
    }
    case Distribution::wch3:
      owned = wch3_expected_owned(s.servers.size(), s.slots, s.slot_weights);
      break;
  }
  return owned;
}

}  // namespace memshard::ketama
