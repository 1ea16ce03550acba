// describe() and diff(): exact keyspace accounting from the rings' structure.
//
// diff() works per server address. For each address it computes `same`, the
// number of the 2^32 hash values that address owns in both rings; then
//   lost   = owned before - same,   gained = owned after - same,
//   moved  = 2^32 - sum of same (none when neither ring has a live server).
// How `same` is computed depends on the two distributions:
//   ketama x ketama  merge of the two sorted arc lists, O(points);
//   ketama x modula  per arc, the values whose residue mod L falls on a slot of
//                    the arc owner's address: O(points * log L);
//   modula x modula  the pattern repeats every lcm(L1, L2) values: one pass
//                    over min(lcm, 2^32) residues (fine for total weights up to
//                    thousands; pathological when both are above ~65536);
//   random x any     the key is ignored, so the numbers are expectations: a
//                    value owned by address a elsewhere stays on a with the
//                    probability that the random pick chooses a.
//   ch3, wch3, crc32 x any   mcrouter's hashes place each key by itself, with
//                    no ring of values to compare: both rings look up the
//                    same kDiffSampleKeys keys, and the counts are scaled to
//                    the 2^32 values (sampled, so not exact).
// Everything except `random` and the sampled ones is exact.
#include "ketama/analysis.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

namespace memshard::ketama {
namespace {

// Servers of both rings, identified by address.
class AddressTable {
 public:
  size_t id(const std::string& address) {
    auto [it, inserted] = ids_.try_emplace(address, addresses_.size());
    if (inserted) {
      addresses_.push_back(address);
    }
    return it->second;
  }
  // Address id of each server of `ring`.
  std::vector<size_t> ids_of(const Ring& ring) {
    std::vector<size_t> ids;
    for (const ServerEntry& s : ring.servers()) {
      ids.push_back(id(s.address()));
    }
    return ids;
  }
  const std::vector<std::string>& addresses() const { return addresses_; }

 private:
  std::unordered_map<std::string, size_t> ids_;
  std::vector<std::string> addresses_;
};

// One side of the comparison: a ring with its servers mapped to address ids.
struct Side {
  const Ring& ring;
  std::vector<size_t> address;  // per server
  Distribution distribution() const { return ring.options().distribution; }
  bool empty() const {
    return distribution() == Distribution::ketama ? ring.arcs().empty() : ring.slots().empty();
  }
};

// ketama x ketama: walk both arc lists together; every piece between two
// consecutive arc ends has one owner on each side.
void same_by_merging_arcs(const Side& a, const Side& b, std::vector<double>& same) {
  std::vector<Arc> x = a.ring.arcs();
  std::vector<Arc> y = b.ring.arcs();
  size_t i = 0;
  size_t j = 0;
  uint64_t start = 0;
  while (i < x.size() && j < y.size()) {
    uint32_t end = std::min(x[i].last, y[j].last);
    size_t owner = a.address[x[i].server];
    if (owner == b.address[y[j].server]) {
      same[owner] += static_cast<double>(uint64_t{end} + 1 - start);
    }
    start = uint64_t{end} + 1;
    if (x[i].last == end) {
      ++i;
    }
    if (y[j].last == end) {
      ++j;
    }
  }
}

// ketama x modula.
void same_arcs_vs_slots(const Side& arcs_side, const Side& slot_side, std::vector<double>& same) {
  const std::vector<uint32_t>& slots = slot_side.ring.slots();
  uint64_t length = slots.size();
  // Slot positions of each address, ascending.
  std::unordered_map<size_t, std::vector<uint64_t>> positions;
  for (uint64_t p = 0; p < length; ++p) {
    positions[slot_side.address[slots[p]]].push_back(p);
  }
  // Values v < x whose slot (v % length) is in `pos`.
  auto count_below = [&](const std::vector<uint64_t>& pos, uint64_t x) {
    uint64_t partial =
        static_cast<uint64_t>(std::lower_bound(pos.begin(), pos.end(), x % length) - pos.begin());
    return (x / length) * pos.size() + partial;
  };
  uint64_t start = 0;
  for (const Arc& arc : arcs_side.ring.arcs()) {
    uint64_t end = uint64_t{arc.last} + 1;
    size_t owner = arcs_side.address[arc.server];
    auto it = positions.find(owner);
    if (it != positions.end()) {
      same[owner] +=
          static_cast<double>(count_below(it->second, end) - count_below(it->second, start));
    }
    start = end;
  }
}

// modula x modula.
void same_slots_vs_slots(const Side& a, const Side& b, std::vector<double>& same) {
  const std::vector<uint32_t>& x = a.ring.slots();
  const std::vector<uint32_t>& y = b.ring.slots();
  uint64_t period = std::lcm(uint64_t{x.size()}, uint64_t{y.size()});
  uint64_t residues = std::min(period, kHashSpace);
  for (uint64_t c = 0; c < residues; ++c) {
    size_t owner = a.address[x[c % x.size()]];
    if (owner == b.address[y[c % y.size()]]) {
      // Values v < 2^32 with v % period == c.
      uint64_t count = period >= kHashSpace ? 1 : (kHashSpace - 1 - c) / period + 1;
      same[owner] += static_cast<double>(count);
    }
  }
}

// Fraction of a random ring's picks that land on each address.
std::vector<double> random_pick_probability(const Side& side, size_t addresses) {
  std::vector<double> p(addresses, 0.0);
  const std::vector<uint32_t>& slots = side.ring.slots();
  for (uint32_t s : slots) {
    p[side.address[s]] += 1.0 / static_cast<double>(slots.size());
  }
  return p;
}

std::vector<double> owned_by_address(const Side& side, size_t addresses) {
  std::vector<double> owned(addresses, 0.0);
  std::vector<uint64_t> per_server = side.ring.owned_hashes();
  for (size_t i = 0; i < per_server.size(); ++i) {
    owned[side.address[i]] += static_cast<double>(per_server[i]);
  }
  return owned;
}

std::vector<double> same_by_address(const Side& a, const Side& b, size_t addresses) {
  std::vector<double> same(addresses, 0.0);
  if (a.empty() || b.empty()) {
    return same;
  }
  Distribution da = a.distribution();
  Distribution db = b.distribution();
  if (da == Distribution::random || db == Distribution::random) {
    const Side& random_side = da == Distribution::random ? a : b;
    const Side& other = da == Distribution::random ? b : a;
    std::vector<double> pick = random_pick_probability(random_side, addresses);
    std::vector<double> owned = owned_by_address(other, addresses);
    for (size_t id = 0; id < addresses; ++id) {
      same[id] = owned[id] * pick[id];
    }
  } else if (da == Distribution::ketama && db == Distribution::ketama) {
    same_by_merging_arcs(a, b, same);
  } else if (da == Distribution::ketama) {
    same_arcs_vs_slots(a, b, same);
  } else if (db == Distribution::ketama) {
    same_arcs_vs_slots(b, a, same);
  } else {
    same_slots_vs_slots(a, b, same);
  }
  return same;
}

constexpr size_t kDiffSampleKeys = 100000;

// ch3, wch3, crc32 on either side: old_owned, new_owned and same from a
// sample of keys looked up on both rings.
void sample_both(const Side& a, const Side& b, size_t addresses, std::vector<double>& old_owned,
                 std::vector<double>& new_owned, std::vector<double>& same) {
  std::vector<uint64_t> in_old(addresses, 0), in_new(addresses, 0), in_both(addresses, 0);
  std::string key;
  for (size_t i = 0; i < kDiffSampleKeys; ++i) {
    key = "memshard:diff:" + std::to_string(i);
    const size_t x = a.ring.lookup(key);
    const size_t y = b.ring.lookup(key);
    if (x != Ring::npos) ++in_old[a.address[x]];
    if (y != Ring::npos) ++in_new[b.address[y]];
    if (x != Ring::npos && y != Ring::npos && a.address[x] == b.address[y]) {
      ++in_both[a.address[x]];
    }
  }
  // Counted whole, then scaled, so that rings that agree on every key
  // give exactly nothing moved.
  const double value = static_cast<double>(kHashSpace) / static_cast<double>(kDiffSampleKeys);
  auto scaled = [value](const std::vector<uint64_t>& counts) {
    std::vector<double> out;
    for (uint64_t c : counts) out.push_back(static_cast<double>(c) * value);
    return out;
  };
  old_owned = scaled(in_old);
  new_owned = scaled(in_new);
  same = scaled(in_both);
}

}  // namespace

RingReport describe(const Ring& ring) {
  RingReport report;
  std::vector<uint64_t> owned = ring.owned_hashes();
  double live_sum = 0;
  size_t live = 0;
  for (size_t i = 0; i < ring.servers().size(); ++i) {
    const ServerEntry& s = ring.servers()[i];
    double share = static_cast<double>(owned[i]) / static_cast<double>(kHashSpace);
    report.servers.push_back(
        {s.address(), ring.ring_name(i), s.weight, ring.point_count(i), share});
    if (ring.is_live(i)) {
      live_sum += share;
      ++live;
    }
  }
  // Coefficient of variation over the live servers (population standard
  // deviation / mean); 0 when none is live.
  report.share_cv = 0;
  if (live > 0 && live_sum > 0) {
    double mean = live_sum / static_cast<double>(live);
    double squares = 0;
    for (size_t i = 0; i < report.servers.size(); ++i) {
      if (ring.is_live(i)) {
        double d = report.servers[i].share - mean;
        squares += d * d;
      }
    }
    report.share_cv = std::sqrt(squares / static_cast<double>(live)) / mean;
  }
  return report;
}

RingDiff diff(const Ring& before, const Ring& after) {
  AddressTable table;
  Side old_side{before, table.ids_of(before)};
  Side new_side{after, table.ids_of(after)};
  size_t addresses = table.addresses().size();

  std::vector<double> old_owned = owned_by_address(old_side, addresses);
  std::vector<double> new_owned = owned_by_address(new_side, addresses);
  constexpr double kSpace = static_cast<double>(kHashSpace);
  const bool sampled = is_mcrouter_distribution(before.options().distribution) ||
                       is_mcrouter_distribution(after.options().distribution);
  bool rehashed = before.key_hash_function() != after.key_hash_function() ||
                  before.options().hash_tag != after.options().hash_tag;
  std::vector<double> same(addresses, 0.0);
  if (sampled) {
    rehashed = false;
    sample_both(old_side, new_side, addresses, old_owned, new_owned, same);
  } else if (rehashed) {
    for (size_t id = 0; id < addresses; ++id) same[id] = old_owned[id] * new_owned[id] / kSpace;
  } else {
    same = same_by_address(old_side, new_side, addresses);
  }

  std::vector<bool> in_old(addresses, false);
  std::vector<bool> in_new(addresses, false);
  for (size_t id : old_side.address) {
    in_old[id] = true;
  }
  for (size_t id : new_side.address) {
    in_new[id] = true;
  }

  RingDiff result;
  result.exact = !rehashed && !sampled;
  result.sampled_keys = sampled ? kDiffSampleKeys : 0;
  double kept = 0;
  for (size_t id = 0; id < addresses; ++id) {
    kept += same[id];
    ServerMove move;
    move.address = table.addresses()[id];
    move.lost = (old_owned[id] - same[id]) / kSpace;
    move.gained = (new_owned[id] - same[id]) / kSpace;
    move.only_in_old = !in_new[id];
    move.only_in_new = !in_old[id];
    result.servers.push_back(std::move(move));
  }
  // A key that has no owner in either ring (both without a live server,
  // such as a routing pool's, which holds no keys) stays where it was:
  // nowhere. Otherwise every hash has an owner on at least one side, and
  // what is not kept moved.
  const bool owned_before =
      std::any_of(old_owned.begin(), old_owned.end(), [](double v) { return v > 0; });
  const bool owned_after =
      std::any_of(new_owned.begin(), new_owned.end(), [](double v) { return v > 0; });
  result.moved = owned_before || owned_after ? (kSpace - kept) / kSpace : 0.0;
  return result;
}

}  // namespace memshard::ketama
