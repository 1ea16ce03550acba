// A discovery pool's membership and its damping, apart from DNS: fed what
// each lookup found and when, it says when the servers in force change and
// to what (docs/discovery.md). Pure: no clock, no I/O; the times it is
// given are the lookups' nominal moments on the wall clock, which are the
// same on every instance (lookups run on a grid of discovery_refresh ms,
// discovery.h), so that instances that see the same records decide the
// same steps at the same moments.
//
// - A lookup that failed, or found no records, changes nothing: the last
//   membership stays (a pool is never emptied) and a change waiting keeps
//   its time.
// - A membership other than the one in force is a candidate. It is applied
//   once a lookup at least `hold_ms` after the first that saw it still sees
//   it; a lookup that sees the servers in force again drops it (a flap),
//   one that sees yet another membership starts the hold anew.
// - One step changes at most max(1, max_change x the servers in force)
//   joins and as many leaves (in identity order); the rest waits for the
//   next step, `hold_ms` after the last one has switched.
// - A step switches at `moment_ms`: the moment it was first seen, plus
//   `hold_ms`, plus `lead_ms` (the proxy gives a fleet switch,
//   reload_switch_at, that long to reach every instance). The proxy rounds
//   hold_ms up to a multiple of the lookups' period, so the lookup that
//   confirms a change is the one at the end of its hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memshard::proxy {

// One server as discovery names it: an SRV target and port, or an address
// and the port of servers_dns. Its identity, "host:port", is its place on
// the ring.
struct DiscoveredMember {
  std::string host;
  uint16_t port = 0;
  uint32_t weight = 1;

  std::string identity() const;
  bool operator==(const DiscoveredMember&) const = default;
};
// Sorted by identity, each identity once.
using Members = std::vector<DiscoveredMember>;
// Sorts and drops repeated identities (the first one's weight stays).
Members normalized(Members members);

class DiscoveryMembership {
 public:
  struct Settings {
    int64_t hold_ms = 30000;
    double max_change = 0.5;  // share of the servers in force; 0: no cap
    int64_t lead_ms = 0;      // from the confirming lookup to the switch
    int64_t window_ms = 0;    // reload_switch_window: the switch's spread
  };
  // What changes: the next membership and who joined, left or changed weight.
  struct Step {
    Members next;
    std::vector<std::string> joined, left, reweighted;
    int64_t seen_ms = 0;       // when the change was first seen (or its step began)
    int64_t confirmed_ms = 0;  // the lookup that applied it
    int64_t moment_ms = 0;     // when the fleet switches to it
    // Joins or leaves that the cap left for later steps.
    size_t waiting = 0;
  };
  enum class Event {
    unchanged,  // the servers in force
    failed,     // the lookup failed, or found nothing: nothing changes
    seen,       // a new candidate: applied once it has lasted hold_ms
    waiting,    // the candidate again, its hold not over
    dropped,    // the servers in force again: the candidate was a flap
    replaced,   // another candidate replaces the one that waited
    step,       // a step to apply (step())
  };

  DiscoveryMembership(Settings settings, Members initial);

  void set_settings(const Settings& s) { settings_ = s; }
  // A lookup made at `at_ms` (its moment on the grid) found `records`
  // (none: it failed). Returns what it means; on Event::step, step() is what
  // to apply, and current() is already it.
  Event observe(int64_t at_ms, const std::optional<Members>& records);
  const Step& step() const { return step_; }
  // The servers in force.
  const Members& current() const { return current_; }
  // Puts `members` in force (a step the proxy could not apply, a reload),
  // dropping any candidate.
  void reset(Members members);

  bool has_candidate() const { return candidate_.has_value(); }
  const Members& candidate() const { return *candidate_; }
  int64_t candidate_since_ms() const { return since_ms_; }
  // Changes held back: candidates dropped or replaced before their hold
  // ended, and steps that left part of their change to later steps.
  uint64_t held() const { return held_; }
  uint64_t failures() const { return failures_; }
  uint64_t applied() const { return applied_; }

 private:
  void make_step(int64_t at_ms);

  Settings settings_;
  Members current_;
  std::optional<Members> candidate_;
  int64_t since_ms_ = 0;
  Step step_;
  uint64_t held_ = 0, failures_ = 0, applied_ = 0;
};

// "a, b (+c, -d, weight e)": how logs name a change.
std::string describe_change(const std::vector<std::string>& joined,
                            const std::vector<std::string>& left,
                            const std::vector<std::string>& reweighted);
// What changes from `from` to `to`.
void diff_members(const Members& from, const Members& to, std::vector<std::string>& joined,
                  std::vector<std::string>& left, std::vector<std::string>& reweighted);

}  // namespace memshard::proxy
