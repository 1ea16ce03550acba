// libmemcached itself, used as the reference: a memcached_st configured like
// the mode under test, whose memcached_generate_hash() says which server
// index a key goes to. No server needs to exist; nothing connects.
#pragma once

#include <libmemcached/memcached.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama::testing {

inline memcached_hash_t to_libmemcached_hash(HashFunction f) {
  switch (f) {
    case HashFunction::one_at_a_time:
      return MEMCACHED_HASH_DEFAULT;
    case HashFunction::md5:
      return MEMCACHED_HASH_MD5;
    case HashFunction::crc32:
      return MEMCACHED_HASH_CRC;
    case HashFunction::fnv1_64:
      return MEMCACHED_HASH_FNV1_64;
    case HashFunction::fnv1a_64:
      return MEMCACHED_HASH_FNV1A_64;
    case HashFunction::fnv1_32:
      return MEMCACHED_HASH_FNV1_32;
    case HashFunction::fnv1a_32:
      return MEMCACHED_HASH_FNV1A_32;
    case HashFunction::murmur:
      return MEMCACHED_HASH_MURMUR;
    case HashFunction::jenkins:
      return MEMCACHED_HASH_JENKINS;
    default:
      throw std::invalid_argument("libmemcached has no such hash");
  }
}

class LibmemcachedOracle {
 public:
  // `hash`: MEMCACHED_BEHAVIOR_HASH to set after the mode, if any.
  LibmemcachedOracle(Mode mode, const std::vector<ServerEntry>& servers,
                     std::optional<HashFunction> hash = std::nullopt)
      : memc_(memcached_create(nullptr)) {
    if (memc_ == nullptr) {
      throw std::runtime_error("memcached_create failed");
    }
    switch (mode) {
      case Mode::libmemcached_weighted:
        check(memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1));
        break;
      case Mode::libmemcached:
        check(memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_KETAMA, 1));
        break;
      case Mode::libmemcached_spy:
        check(memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                     MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY));
        break;
      default:
        throw std::invalid_argument("not a libmemcached mode");
    }
    if (hash) {
      check(memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_HASH, to_libmemcached_hash(*hash)));
    }
    for (const ServerEntry& s : servers) {
      if (s.is_unix) {
        check(memcached_server_add_unix_socket_with_weight(memc_, s.host.c_str(), s.weight));
      } else {
        check(memcached_server_add_with_weight(memc_, s.host.c_str(), s.port, s.weight));
      }
    }
  }
  ~LibmemcachedOracle() { memcached_free(memc_); }
  LibmemcachedOracle(const LibmemcachedOracle&) = delete;
  LibmemcachedOracle& operator=(const LibmemcachedOracle&) = delete;

  size_t server_for(std::string_view key) const {
    return memcached_generate_hash(memc_, key.data(), key.size());
  }

 private:
  static void check(memcached_return_t rc) {
    if (rc != MEMCACHED_SUCCESS) {
      throw std::runtime_error(std::string("libmemcached: ") + memcached_strerror(nullptr, rc));
    }
  }

  memcached_st* memc_;
};

}  // namespace memshard::ketama::testing
