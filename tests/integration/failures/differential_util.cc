#include "differential_util.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace memshard::testing::failures {

std::vector<size_t> chosen_cases(const char* env, size_t generated) {
  std::vector<size_t> out;
  const char* list = std::getenv(env);
  if (list == nullptr || *list == '\0') {
    for (size_t i = 0; i < generated; ++i) out.push_back(i);
    return out;
  }
  const std::string s(list);
  for (size_t at = 0; at < s.size();) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    char* stop = nullptr;
    const unsigned long n = std::strtoul(item.c_str(), &stop, 10);
    if (stop != item.c_str() && n < generated) out.push_back(n);
    at = end + 1;
  }
  std::cout << env << "=" << s << ": running " << out.size() << " chosen case(s) of " << generated
            << "\n";
  return out;
}

namespace {

// 2^62 has 19 digits: a run of 18 digits is below 10^18, safely under it.
constexpr size_t kRiskyDigits = 19;

bool all_digits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void TopHalfNumbers::clear() {
  big_.clear();
  digits_.clear();
}

void TopHalfNumbers::stored(const std::string& key, std::string_view value, bool concat) {
  if (!all_digits(value)) return;
  size_t& d = digits_[key];
  d = concat ? d + value.size() : std::max(d, value.size());
  if (d >= kRiskyDigits) big_.insert(key);
}

void TopHalfNumbers::counted(const std::string& key, bool raises, uint64_t delta, bool creates,
                             uint64_t initial) {
  if ((raises && delta >= kRisky) || (creates && initial >= kRisky)) big_.insert(key);
}

bool TopHalfNumbers::may_hold(const std::string& key) const {
  return big_.contains(key);
}

}  // namespace memshard::testing::failures
