// What reloads and the passing time do to a pool's placements, as pure
// functions over Pool values (pool_state.h), run on the main thread when a
// topology is built (topology.h) or changed by the clock:
//
// reload_warmup: a reload that moves keys hands the pool in force's ring
// on to the new pool as a past ring (carry_past), until its window ends
// (drop_expired).
//
// reload_switch_at: a reload whose placement differs from the one in
// force, with a switch time:
//   - the pool keeps the placement in force and the new one waits in
//     Pool::pending; the new config's other settings apply at once;
//   - once the switch's window ends (reload_switch_at plus
//     reload_switch_window), promote() makes the pending placement the
//     pool's own and the one it replaces a past ring: the reload_warmup
//     fallback, open for reload_warmup ms after the window;
//   - a config loaded after its switch time is late: the keys whose moment
//     has passed switch at once, and the note says how late it was.
// A reload that comes while a switch waits replaces it cleanly: the
// pending placement never was in force, so it is dropped (writes only ever
// deleted keys there) and the new config is planned against the placement
// in force, so that no key is left between three placements. The same
// placement again keeps the switch (rescheduled if its time changed). A
// switch whose window has begun has moved keys already: it completes
// first, and the new config is planned against it.
// The routes (switch_routes.h) pick, per request, which placement a key
// follows while a switch waits or runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/routes/pool_state.h"

namespace memshard::proxy {

// Whether every key would find its server where it was: the same points
// over the same servers, with as many copies (a server replaced under the
// same ring name, as twemproxy's names allow, moves every key it held).
bool same_placement(const Pool& a, const Pool& b);
bool same_placement(const Pool& a, const PendingSwitch& b);

// Gives `next` the rings `old` (the same pool in the config in force) had
// and still has inside the window at `now_usec`: old's own ring first,
// when next's differs and next has reload_warmup. Nothing when off.
void carry_past(const Pool& old, uint64_t old_generation, Pool& next, uint64_t now_usec);
// Drops past rings whose window ended by `now_usec`; true if any went.
bool drop_expired(Pool& pool, uint64_t now_usec);

// One reading of both clocks: monotonic (what the proxy times with) and
// the wall clock (what reload_switch_at is written in).
struct WallClock {
  uint64_t mono_usec = 0;
  int64_t unix_usec = 0;
};

// "2026-01-01T00:00:00Z" (".250" before the Z when there are milliseconds).
std::string utc_text(int64_t unix_ms);

// The wall clock at the monotonic moment `mono_usec` (read now).
int64_t wall_clock_at(uint64_t mono_usec);

// The monotonic moment of the unix time `unix_ms`, by `now` (0 when it
// was before the monotonic clock began).
uint64_t monotonic_moment(int64_t unix_ms, const WallClock& now);

// Carries the pool in force (`old`, of `old_generation`) into `next`, the
// same pool built from the new config of `generation`: past rings, the
// warm-up guard and any switch, as described above. `notes` (may be null)
// gets a line for each decision the operator should hear of.
void carry_pool(const Pool& old, uint64_t old_generation, Pool& next, uint64_t generation,
                const WallClock& now, std::vector<std::string>* notes);

// The pending placement becomes the pool's; the one in force a past ring.
void promote(Pool& pool, uint64_t now_usec);
// promote() once the switch's window has ended by `now_usec`; true if so.
bool promote_due(Pool& pool, uint64_t now_usec);
// Follows a step of the wall clock since the switch was planned: the
// pending switch's monotonic moment is read again from its unix time;
// true when it moved by more than a millisecond.
bool retime(Pool& pool, const WallClock& now);

}  // namespace memshard::proxy
