// The descriptor budget (proxy/runtime/descriptor_budget.h): what the
// descriptor limit leaves for clients once the servers, the proxy itself
// and the spare are set aside, and the process figures it starts from.
#include "proxy/runtime/descriptor_budget.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "conf/config.h"
#include "proxy/support/clock.h"
#include "test_topology.h"

namespace memshard::proxy {
namespace {

using test::topology_of;

std::string pool_yaml(const std::string& name, int port, const std::vector<int>& server_ports,
                      int connections, const std::string& extra = "") {
  std::string text = name + ":\n  listen: 127.0.0.1:" + std::to_string(port) +
                     "\n  server_connections: " + std::to_string(connections) + "\n" + extra +
                     "  servers:\n";
  for (int p : server_ports) text += "   - 127.0.0.1:" + std::to_string(p) + ":1\n";
  return text;
}

TEST(DescriptorBudgetTest, ClientsGetWhatServersTheProxyAndTheSpareLeave) {
  const DescriptorBudget budget{1000, 10, 100};
  EXPECT_EQ(DescriptorBudget::kSpare, 32u);
  EXPECT_EQ(budget.clients(), 1000u - 10 - 100 - 32);
}

TEST(DescriptorBudgetTest, ALimitThatLeavesNoRoomGivesNone) {
  EXPECT_EQ((DescriptorBudget{142, 10, 100}.clients()), 0u);  // exactly used up
  EXPECT_EQ((DescriptorBudget{143, 10, 100}.clients()), 1u);
  EXPECT_EQ((DescriptorBudget{50, 10, 100}.clients()), 0u);  // overdrawn: not a wrap-around
  EXPECT_EQ((DescriptorBudget{0, 0, 0}.clients()), 0u);
}

TEST(DescriptorBudgetTest, DescribeSaysEveryFigure) {
  EXPECT_EQ((DescriptorBudget{65536, 12, 40}.describe()),
            "limit 65536: room for 65452 client connections (40 for server connections, 12 in "
            "use by memshard itself, 32 spare)");
}

TEST(DescriptorBudgetTest, EveryWorkerMayConnectToEveryServerAndAProbeToo) {
  const auto t = topology_of(pool_yaml("alpha", 22199, {11211, 11212, 11213}, 2) +
                             pool_yaml("beta", 22198, {11214}, 1));
  // alpha: 3 servers x (4 workers x 2 + 1 probe); beta: 1 x (4 x 1 + 1).
  EXPECT_EQ(server_connections_at_most(*t, 4), 3u * 9 + 5);
  EXPECT_EQ(server_connections_at_most(*t, 1), 3u * 3 + 2);
}

TEST(DescriptorBudgetTest, ServersOfAWarmUpWindowCountOnce) {
  const std::string warmup = "  reload_warmup: 60000\n";
  const auto before = topology_of(pool_yaml("alpha", 22199, {11211, 11212}, 1, warmup));
  // 11212 leaves, 11213 comes: the past ring keeps 11212 connected.
  const auto after =
      topology_of(pool_yaml("alpha", 22199, {11211, 11213}, 1, warmup), before.get());
  ASSERT_EQ(after->pools[0].past.size(), 1u);
  EXPECT_EQ(server_connections_at_most(*after, 2), 3u * 3);
}

TEST(DescriptorBudgetTest, TheLimitIsTheSoftOne) {
  rlimit was{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &was), 0);
  EXPECT_EQ(descriptor_limit(), was.rlim_cur == RLIM_INFINITY ? UINT64_MAX : was.rlim_cur);
  if (was.rlim_cur < 512) GTEST_SKIP() << "the soft limit is already low";
  rlimit lower = was;
  lower.rlim_cur = 500;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lower), 0);
  const uint64_t seen = descriptor_limit();
  setrlimit(RLIMIT_NOFILE, &was);
  EXPECT_EQ(seen, 500u);
}

TEST(DescriptorBudgetTest, OpenDescriptorsFollowsWhatTheProcessOpensAndCloses) {
  const uint64_t before = open_descriptors();
  ASSERT_GE(before, 3u) << "stdin, stdout and stderr at least";
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(open_descriptors(), before + 5);
  for (int fd : fds) close(fd);
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace
}  // namespace memshard::proxy
