// Ring build and lookup cost on a 1000-server ring.
//   ketama_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "ketama/ring.h"

namespace memshard::ketama {
namespace {

std::vector<ServerEntry> servers(size_t count) {
  std::vector<ServerEntry> list;
  for (size_t i = 0; i < count; ++i) {
    ServerEntry s;
    s.host = "10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    s.port = 11211;
    list.push_back(s);
  }
  return list;
}

// Keys like "user:123456:profile", many more than the caches hold, so the
// search is measured with cold-ish lines rather than one hot path.
std::vector<std::string> keys(size_t count) {
  std::mt19937_64 rng(1);
  std::vector<std::string> list;
  for (size_t i = 0; i < count; ++i) {
    list.push_back("user:" + std::to_string(rng() % 100000000) + ":profile");
  }
  return list;
}

RingOptions options_for(Mode mode) {
  RingOptions o;
  o.mode = mode;
  return o;
}

void BM_Build(benchmark::State& state, Mode mode) {
  std::vector<ServerEntry> list = servers(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    Ring ring = Ring::build(list, options_for(mode));
    benchmark::DoNotOptimize(ring.points().data());
  }
}
BENCHMARK_CAPTURE(BM_Build, twemproxy, Mode::twemproxy)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Build, libmemcached, Mode::libmemcached)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);

void BM_Lookup(benchmark::State& state, Mode mode) {
  Ring ring = Ring::build(servers(static_cast<size_t>(state.range(0))), options_for(mode));
  std::vector<std::string> list = keys(1 << 16);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ring.lookup(list[i++ & (list.size() - 1)]));
  }
}
// fnv1a_64 key hash (twemproxy's default).
BENCHMARK_CAPTURE(BM_Lookup, twemproxy, Mode::twemproxy)->Arg(1000);
// MD5 key hash.
BENCHMARK_CAPTURE(BM_Lookup, libmemcached_weighted, Mode::libmemcached_weighted)->Arg(1000);

// The continuum search alone, on random hash values.
void BM_ServerForHash(benchmark::State& state) {
  Ring ring = Ring::build(servers(static_cast<size_t>(state.range(0))), RingOptions{});
  std::mt19937 rng(2);
  std::vector<uint32_t> hashes(1 << 16);
  for (uint32_t& h : hashes) {
    h = static_cast<uint32_t>(rng());
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ring.server_for_hash(hashes[i++ & (hashes.size() - 1)]));
  }
}
BENCHMARK(BM_ServerForHash)->Arg(1000);

}  // namespace
}  // namespace memshard::ketama

BENCHMARK_MAIN();
