#include "proxy/runtime/discovery_membership.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace memshard::proxy {

std::string DiscoveredMember::identity() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Members normalized(Members members) {
  std::stable_sort(members.begin(), members.end(),
                   [](const DiscoveredMember& a, const DiscoveredMember& b) {
                     return a.identity() < b.identity();
                   });
  auto last = std::unique(members.begin(), members.end(),
                          [](const DiscoveredMember& a, const DiscoveredMember& b) {
                            return a.identity() == b.identity();
                          });
  members.erase(last, members.end());
  return members;
}

void diff_members(const Members& from, const Members& to, std::vector<std::string>& joined,
                  std::vector<std::string>& left, std::vector<std::string>& reweighted) {
  std::map<std::string, uint32_t> before, after;
  for (const auto& m : from) before.emplace(m.identity(), m.weight);
  for (const auto& m : to) after.emplace(m.identity(), m.weight);
  for (const auto& [id, w] : after) {
    auto it = before.find(id);
    if (it == before.end()) {
      joined.push_back(id);
    } else if (it->second != w) {
      reweighted.push_back(id);
    }
  }
  for (const auto& [id, w] : before) {
    if (!after.contains(id)) left.push_back(id);
  }
}

std::string describe_change(const std::vector<std::string>& joined,
                            const std::vector<std::string>& left,
                            const std::vector<std::string>& reweighted) {
  std::string out;
  const auto add = [&](const std::string& what, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    if (!out.empty()) out += "; ";
    out += what;
    for (size_t i = 0; i < ids.size(); ++i) out += (i == 0 ? " " : ", ") + ids[i];
  };
  add("joined:", joined);
  add("left:", left);
  add("new weight:", reweighted);
  return out.empty() ? "no change" : out;
}

DiscoveryMembership::DiscoveryMembership(Settings settings, Members initial)
    : settings_(settings), current_(normalized(std::move(initial))) {}

void DiscoveryMembership::reset(Members members) {
  current_ = normalized(std::move(members));
  candidate_.reset();
}

DiscoveryMembership::Event DiscoveryMembership::observe(int64_t at_ms,
                                                        const std::optional<Members>& records) {
  if (!records || records->empty()) {
    ++failures_;
    return Event::failed;
  }
  Members seen = normalized(*records);
  if (seen == current_) {
    if (!candidate_) return Event::unchanged;
    candidate_.reset();
    ++held_;
    return Event::dropped;
  }
  Event event = Event::waiting;
  if (!candidate_ || *candidate_ != seen) {
    event = candidate_ ? Event::replaced : Event::seen;
    if (candidate_) ++held_;
    candidate_ = std::move(seen);
    since_ms_ = at_ms;
  }
  if (at_ms - since_ms_ < settings_.hold_ms) return event;
  make_step(at_ms);
  return Event::step;
}

void DiscoveryMembership::make_step(int64_t at_ms) {
  std::vector<std::string> joined, left, reweighted;
  diff_members(current_, *candidate_, joined, left, reweighted);
  size_t limit = SIZE_MAX;
  if (settings_.max_change > 0) {
    const double share = std::floor(static_cast<double>(current_.size()) * settings_.max_change);
    limit = std::max<size_t>(1, static_cast<size_t>(share));
  }
  size_t waiting = 0;
  if (joined.size() > limit) {
    waiting += joined.size() - limit;
    joined.resize(limit);
  }
  if (left.size() > limit) {
    waiting += left.size() - limit;
    left.resize(limit);
  }
  // The next membership: the one in force, less the leaves taken, plus the
  // joins taken, every weight as the candidate has it.
  std::map<std::string, DiscoveredMember> next;
  for (const auto& m : current_) next.emplace(m.identity(), m);
  for (const auto& id : left) next.erase(id);
  for (const auto& m : *candidate_) {
    const std::string id = m.identity();
    if (next.contains(id) || std::find(joined.begin(), joined.end(), id) != joined.end())
      next[id] = m;
  }
  Step s;
  for (auto& [id, m] : next) s.next.push_back(m);
  s.joined = std::move(joined);
  s.left = std::move(left);
  s.reweighted = std::move(reweighted);
  s.seen_ms = since_ms_;
  s.confirmed_ms = at_ms;
  // From when it was seen, not from this lookup's moment: an instance
  // whose lookup at the end of the hold failed confirms a lookup later, and
  // still switches with the others (late, so at once).
  s.moment_ms = since_ms_ + settings_.hold_ms + settings_.lead_ms;
  s.waiting = waiting;
  current_ = s.next;
  ++applied_;
  if (waiting > 0) {
    // The rest is the next step's: held again for hold_ms once this one
    // has switched, counted from a moment every instance shares.
    ++held_;
    since_ms_ = s.moment_ms + settings_.window_ms;
  } else {
    candidate_.reset();
  }
  step_ = std::move(s);
}

}  // namespace memshard::proxy
