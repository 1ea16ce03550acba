#include "fleet_util.h"

#include <csignal>
#include <ctime>
#include <random>

namespace memshard::testing::reload {

int64_t unix_now() {
  return static_cast<int64_t>(time(nullptr));
}

Fleet::Fleet(size_t servers) {
  for (size_t i = 0; i < servers; ++i) mc_.push_back(std::make_unique<Memcached>());
}

std::string Fleet::log(size_t instance) const {
  return read_file(dir_.path() + "/memshard-" + std::to_string(instance) + ".log");
}

std::string Fleet::config(size_t instance, const std::vector<size_t>& servers,
                          const std::vector<std::string>& directives) const {
  PoolDef p;
  p.listen = listen_on(ports_[instance]);
  for (size_t s : servers) p.servers.push_back({mc_[s]->port(), 1});
  p.directives = directives;
  return yaml(p);
}

::testing::AssertionResult Fleet::start(size_t instances, const std::vector<size_t>& servers,
                                        const std::vector<std::string>& directives) {
  for (size_t i = 0; i < instances; ++i) {
    ports_.push_back(free_port());
    const std::string name = "memshard-" + std::to_string(i);
    dir_.write(name + ".yml", config(i, servers, directives));
    ms_.push_back(std::make_unique<Memshard>(dir_.path() + "/" + name + ".yml",
                                             memshard_args({"--threads", "2", "-v", "6"}),
                                             ports_[i], dir_.path() + "/" + name + ".log"));
    if (!wait_ready(ports_[i])) {
      return ::testing::AssertionFailure() << "instance " << i << " did not start";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Fleet::reload(size_t instance, const std::vector<size_t>& servers,
                                         const std::vector<std::string>& directives) {
  const uint64_t g = stat_of(proxy_stats(ports_[instance]), "config_generation");
  dir_.write("memshard-" + std::to_string(instance) + ".yml",
             config(instance, servers, directives));
  ms_[instance]->process().signal(SIGHUP);
  if (!wait_stat(ports_[instance], "config_generation", [&](uint64_t v) { return v == g + 1; })) {
    return ::testing::AssertionFailure() << "instance " << instance << " did not reload";
  }
  return ::testing::AssertionSuccess();
}

std::map<std::string, std::string> Fleet::stats(size_t instance) const {
  return proxy_stats(ports_[instance]);
}

// ------------------------------------------------------------------ load

VersionLoad::VersionLoad(std::vector<uint16_t> ports, size_t writers, size_t keys, size_t readers,
                         uint64_t seed)
    : ports_(std::move(ports)),
      writers_(writers),
      keys_(keys),
      readers_(readers),
      seed_(seed),
      acked_(writers * keys) {}

VersionLoad::~VersionLoad() {
  stop();
}

std::string VersionLoad::key(size_t writer, size_t i) const {
  return key_of("fleet" + std::to_string(writer), i);
}

std::vector<std::string> VersionLoad::keys() const {
  std::vector<std::string> out;
  for (size_t w = 0; w < writers_; ++w) {
    for (size_t i = 0; i < keys_; ++i) out.push_back(key(w, i));
  }
  return out;
}

std::vector<uint64_t> VersionLoad::acked() const {
  std::vector<uint64_t> out;
  for (const auto& a : acked_) out.push_back(a.load());
  return out;
}

bool VersionLoad::each_written_since(const std::vector<uint64_t>& before) const {
  for (size_t i = 0; i < acked_.size() && i < before.size(); ++i) {
    if (acked_[i].load() <= before[i]) return false;
  }
  return true;
}

void VersionLoad::start() {
  for (size_t w = 0; w < writers_; ++w) {
    threads_.emplace_back([this, w] { write(w, seed_ + w); });
  }
  for (size_t r = 0; r < readers_; ++r) {
    threads_.emplace_back([this, r] { read(seed_ + 1000 + r); });
  }
}

void VersionLoad::stop() {
  stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void VersionLoad::note(std::atomic<uint64_t>& count, std::string what) {
  count.fetch_add(1);
  std::lock_guard<std::mutex> lock(examples_mu_);
  if (examples_.size() < 8) examples_.push_back(std::move(what));
}

std::string VersionLoad::summary() const {
  std::string out = std::to_string(reads_.load()) + " reads, " + std::to_string(writes_.load()) +
                    " writes: " + std::to_string(stale_.load()) + " stale, " +
                    std::to_string(lost_.load()) + " lost, " + std::to_string(errors_.load()) +
                    " errors";
  std::lock_guard<std::mutex> lock(examples_mu_);
  for (const std::string& e : examples_) out += "\n  " + e;
  return out;
}

// Each value is "<version>:<key>".
void VersionLoad::write(size_t writer, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::unique_ptr<Conn>> conns;
  for (uint16_t p : ports_) conns.push_back(std::make_unique<Conn>(p));
  std::vector<uint64_t> version(keys_, 0);
  for (size_t i = 0; !stop_; i = (i + 1) % keys_) {
    const std::string k = key(writer, i);
    const uint64_t v = version[i] + 1;
    const size_t via = rng() % conns.size();
    if (!conns[via]->set(k, std::to_string(v) + ":" + k)) {
      note(errors_,
           "set " + k + " through instance " + std::to_string(via) + ": " + conns[via]->describe());
      conns[via] = std::make_unique<Conn>(ports_[via]);
      continue;
    }
    version[i] = v;
    acked_[writer * keys_ + i].store(v);
    writes_.fetch_add(1);
  }
}

void VersionLoad::read(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::unique_ptr<Conn>> conns;
  for (uint16_t p : ports_) conns.push_back(std::make_unique<Conn>(p));
  while (!stop_) {
    const size_t slot = rng() % acked_.size();
    const std::string k = key(slot / keys_, slot % keys_);
    const uint64_t floor = acked_[slot].load();
    const size_t via = rng() % conns.size();
    std::vector<Hit> hits;
    if (!conns[via]->get({k}, hits)) {
      note(errors_,
           "get " + k + " through instance " + std::to_string(via) + ": " + conns[via]->describe());
      conns[via] = std::make_unique<Conn>(ports_[via]);
      continue;
    }
    reads_.fetch_add(1);
    if (hits.empty()) {
      if (floor > 0) {
        note(lost_, k + " missed through instance " + std::to_string(via) + ", version " +
                        std::to_string(floor) + " acknowledged");
      }
      continue;
    }
    const std::string& data = hits.front().data;
    const uint64_t got = std::stoull(data.substr(0, data.find(':')));
    if (got < floor) {
      note(stale_, k + " read version " + std::to_string(got) + " through instance " +
                       std::to_string(via) + ", " + std::to_string(floor) + " acknowledged");
    }
  }
}

}  // namespace memshard::testing::reload
