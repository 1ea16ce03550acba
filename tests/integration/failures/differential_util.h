// What the two differential tests (text and binary) share: choosing the
// generated cases to run, and keeping out of the generated mix the one
// input whose answer memcached itself does not decide from the requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::testing::failures {

// The generated cases to run: all `generated` of them, or those the
// environment variable `env` names ("2427,2462"), so that a case a run
// reported can be rerun alone. Every case is still generated, so each keeps
// the bytes it had in the full run. Prints the choice when there is one.
std::vector<size_t> chosen_cases(const char* env, size_t generated);

// memcached before 1.6.22 (Debian 12 ships 1.6.18) cannot be trusted to
// answer an incr, decr or ma on a stored number in [2^63, 2^64): such a
// number is negative as a signed one, so safe_strtoull() looks for a '-'
// with strchr(), which runs past the value (an item's data is not
// NUL-terminated) into whatever stale bytes an earlier item left in the
// slab chunk. A '-' there makes the answer "non-numeric"; nothing in the
// requests decides it (memcached commit ea92c6c0, "fix incr/decr/ma failing
// in some conditions"; MemcachedQuirk.* reproduces it). Two memcacheds, or
// one at two moments, answer the same requests differently.
//
// A generator tells this what its case stores and counts, key by key, and
// sends no arithmetic to a key that may hold such a number. Big numbers are
// still stored, created, returned and wrapped around; only the read that
// memcached gets wrong by chance is left out.
class TopHalfNumbers {
 public:
  // Numbers from here up may reach the top half within one case (a case
  // adds at most a few dozen deltas of at most 2^32 to a smaller one).
  static constexpr uint64_t kRisky = uint64_t{1} << 62;

  void clear();
  // A store of `value` to `key`: replacing it, or (concat) appended or
  // prepended to what is there. Only digits can make a number: a value
  // with any other byte leaves the key's bound as it was (either the
  // store failed, or the result holds a non-digit, which memcached rejects
  // before the faulty check).
  void stored(const std::string& key, std::string_view value, bool concat);
  // An incr (raises) or decr on `key` by `delta`, creating it at `initial`
  // when `creates`.
  void counted(const std::string& key, bool raises, uint64_t delta, bool creates, uint64_t initial);
  // True when `key` may hold a number in [2^63, 2^64) by now.
  bool may_hold(const std::string& key) const;
  // True when some key may.
  bool any() const { return !big_.empty(); }

 private:
  std::set<std::string> big_;
  // The longest run of digits the key's value may have.
  std::map<std::string, size_t> digits_;
};

}  // namespace memshard::testing::failures
