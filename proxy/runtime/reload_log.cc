#include "proxy/runtime/reload_log.h"

#include <ctime>

namespace memshard::proxy {

void ReloadLog::started(uint64_t generation) {
  ReloadRecord r;
  r.generation = generation;
  r.outcome = ReloadRecord::Outcome::started;
  add(std::move(r));
}

void ReloadLog::applied(uint64_t generation, std::vector<std::pair<std::string, double>> moved) {
  ReloadRecord r;
  r.generation = generation;
  r.outcome = ReloadRecord::Outcome::applied;
  r.moved = std::move(moved);
  add(std::move(r));
}

void ReloadLog::refused(uint64_t generation, std::string reason) {
  ReloadRecord r;
  r.generation = generation;
  r.outcome = ReloadRecord::Outcome::refused;
  r.reason = std::move(reason);
  add(std::move(r));
}

std::vector<ReloadRecord> ReloadLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {records_.begin(), records_.end()};
}

void ReloadLog::add(ReloadRecord r) {
  r.at = static_cast<int64_t>(time(nullptr));
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(std::move(r));
  while (records_.size() > kKept) records_.pop_front();
}

}  // namespace memshard::proxy
