// A topology from a config's text, for the tests of proxy/runtime: built
// as a reload builds it, after `previous` when given (whose pools hand on
// their rings), with the generation after previous's (1 without one)
// unless `generation` names another. A config with errors throws the
// first.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "conf/config.h"
#include "proxy/routes/topology.h"
#include "proxy/support/clock.h"

namespace memshard::proxy::test {

inline std::shared_ptr<const Topology> topology_of(const std::string& yaml,
                                                   const Topology* previous = nullptr,
                                                   uint64_t generation = 0) {
  conf::LoadResult loaded = conf::parse_config(yaml, "test.yml");
  if (!loaded.errors.empty()) throw std::runtime_error(loaded.errors.front().to_string());
  if (generation == 0) generation = previous == nullptr ? 1 : previous->generation + 1;
  return build_topology(*loaded.config, generation, previous, monotonic_usec());
}

}  // namespace memshard::proxy::test
