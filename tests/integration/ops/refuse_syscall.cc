// refuse_syscall NAME COMMAND [ARG...]: runs COMMAND with one system call
// refused (EPERM), the way a container's seccomp profile refuses what it
// does not allow: Docker's default profile refuses io_uring. NAME is
// io_uring_setup (the ring cannot be made) or io_uring_enter (the ring is
// made, but no submission is ever taken). The filter is inherited by every
// thread of COMMAND and cannot be lifted by it.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

long syscall_number(std::string_view name) {
  if (name == "io_uring_setup") return __NR_io_uring_setup;
  if (name == "io_uring_enter") return __NR_io_uring_enter;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  long nr = argc >= 3 ? syscall_number(argv[1]) : -1;
  if (nr < 0) {
    fprintf(stderr, "usage: refuse_syscall io_uring_setup|io_uring_enter COMMAND [ARG...]\n");
    return 2;
  }
  // Matched by this build's numbers only. A call under another ABI (i386,
  // x32) would slip through; memshard, built for this one, makes none.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  // Without no_new_privs an unprivileged process may not install a filter.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    fprintf(stderr, "refuse_syscall: cannot install the filter: %s\n", strerror(errno));
    return 125;
  }
  execvp(argv[2], argv + 2);
  fprintf(stderr, "refuse_syscall: cannot run %s: %s\n", argv[2], strerror(errno));
  return 127;
}
