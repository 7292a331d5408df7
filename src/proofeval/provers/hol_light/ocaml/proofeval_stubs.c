/* What OCaml's Unix library lacks to confine a process: resource limits, death with the
   parent, no inspection through /proc, and a seccomp filter for proof attempts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <caml/mlvalues.h>
#include <caml/memory.h>
#include <caml/fail.h>

static const int resources[] = {RLIMIT_AS, RLIMIT_CPU, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE};

/* which: 0 address space (bytes), 1 cpu (seconds), 2 processes, 3 file size, 4 core size */
value proofeval_setrlimit(value which, value limit)
{
  CAMLparam2(which, limit);
  int w = Int_val(which);
  if (w < 0 || w >= (int)(sizeof resources / sizeof resources[0]))
    caml_invalid_argument("proofeval_setrlimit");
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)Int64_val(limit);
  if (setrlimit(resources[w], &rl) != 0) caml_failwith("setrlimit failed");
  CAMLreturn(Val_unit);
}

/* Die with SIGKILL when the parent (the warm server) dies. */
value proofeval_die_with_parent(value unit)
{
  CAMLparam1(unit);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  CAMLreturn(Val_unit);
}

/* No other process (even with our uid) may open this one's /proc entries: its
   descriptors (a worker's verdict pipe), memory or environment. Forks inherit it. */
value proofeval_forbid_inspection(value unit)
{
  CAMLparam1(unit);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) caml_failwith("PR_SET_DUMPABLE failed");
  CAMLreturn(Val_unit);
}

/* An attempt only computes: refuse it every system call that reaches another process
   (signals, ptrace, another's memory or descriptors) or makes a new one (fork, exec),
   sockets (the control socket is the launcher's), and every change to files: opening
   one for writing (through /proc, another process's descriptors and memory are files
   too), creating, removing, renaming or re-permitting one. Each fails with EPERM. */
#if defined(__x86_64__)
#define PROOFEVAL_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PROOFEVAL_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef PROOFEVAL_ARCH
#define REFUSE(nr) \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

static struct sock_filter attempt_filter[] = {
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROOFEVAL_ARCH, 1, 0),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
  /* x32 numbers reach the same calls: refuse them all */
  BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
  REFUSE(__NR_fork), REFUSE(__NR_vfork),
#endif
  REFUSE(__NR_kill), REFUSE(__NR_tkill), REFUSE(__NR_tgkill),
  REFUSE(__NR_rt_sigqueueinfo), REFUSE(__NR_rt_tgsigqueueinfo),
  REFUSE(__NR_ptrace), REFUSE(__NR_process_vm_readv), REFUSE(__NR_process_vm_writev),
  REFUSE(__NR_pidfd_open), REFUSE(__NR_pidfd_send_signal), REFUSE(__NR_pidfd_getfd),
  REFUSE(__NR_clone), REFUSE(__NR_clone3), REFUSE(__NR_execve), REFUSE(__NR_execveat),
  REFUSE(__NR_socket), REFUSE(__NR_socketpair),
#ifdef __NR_openat2
  REFUSE(__NR_openat2), /* its flags are out of a filter's reach */
#endif
  REFUSE(__NR_truncate), REFUSE(__NR_unlinkat), REFUSE(__NR_renameat), REFUSE(__NR_renameat2),
  REFUSE(__NR_linkat), REFUSE(__NR_symlinkat), REFUSE(__NR_mkdirat), REFUSE(__NR_mknodat),
  REFUSE(__NR_fchmodat), REFUSE(__NR_fchmod), REFUSE(__NR_fchownat), REFUSE(__NR_fchown),
#if defined(__x86_64__)
  REFUSE(__NR_creat), REFUSE(__NR_unlink), REFUSE(__NR_rename), REFUSE(__NR_link),
  REFUSE(__NR_symlink), REFUSE(__NR_mkdir), REFUSE(__NR_rmdir), REFUSE(__NR_mknod),
  REFUSE(__NR_chmod), REFUSE(__NR_chown), REFUSE(__NR_lchown),
  /* open(path, flags): flags are argument 1 */
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 2),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
  BPF_JUMP(BPF_JMP | BPF_JA, 2, 0, 0), /* to the test of the flags */
#endif
  /* openat(dir, path, flags): flags are argument 2 */
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 2),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
  BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 1, 0),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
};
#endif

value proofeval_confine_attempt(value unit)
{
  CAMLparam1(unit);
#ifdef PROOFEVAL_ARCH
  struct sock_fprog prog = {
    (unsigned short)(sizeof attempt_filter / sizeof attempt_filter[0]), attempt_filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
      || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    caml_failwith("seccomp failed");
#else
  caml_failwith("seccomp: unsupported architecture");
#endif
  CAMLreturn(Val_unit);
}
