/* What OCaml's Unix library lacks to confine a process: resource limits, death with the
   parent, no inspection through /proc, and a seccomp filter for proof attempts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
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

/* An attempt only computes and reports: an allow-list of the system calls OCaml code
   needs for that (memory, reading and writing descriptors it holds, reading files the
   sandbox shows, signal handling for itself, clocks, exit). Every other call fails with
   EPERM: no signals to, limits or priorities of, or memory of another process, no new
   process or program, no sockets, no change to any file (opening one for writing
   included: through /proc, another process's descriptors are files too), no ioctl, no
   namespaces. tests/test_hol_syscalls.py makes each refused family from a context that
   can make any system call. */
#if defined(__x86_64__)
#define PROOFEVAL_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PROOFEVAL_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef PROOFEVAL_ARCH
#define ALLOW(nr) \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define REFUSED BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)
/* open-like call [nr] whose flags are argument [arg]: allowed only to read */
#define READ_ONLY(nr, arg) \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4), \
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])), \
  BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, WRITE_FLAGS, 1, 0), \
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
  REFUSED

static struct sock_filter attempt_filter[] = {
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROOFEVAL_ARCH, 1, 0),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
  /* memory */
  ALLOW(__NR_brk), ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mremap),
  ALLOW(__NR_mprotect), ALLOW(__NR_madvise),
  /* descriptors it holds, and files the sandbox shows, read */
  ALLOW(__NR_read), ALLOW(__NR_readv), ALLOW(__NR_pread64), ALLOW(__NR_write),
  ALLOW(__NR_writev), ALLOW(__NR_lseek), ALLOW(__NR_close), ALLOW(__NR_fstat),
  ALLOW(__NR_newfstatat), ALLOW(__NR_getdents64),
  /* where it is (OCaml 5.3's toplevel asks while type-checking a phrase; it names a
     directory the sandbox shows, and changes nothing) */
  ALLOW(__NR_getcwd),
  /* signals, to itself: handlers and masks (stack overflow, the CPU limit) */
  ALLOW(__NR_rt_sigaction), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
  ALLOW(__NR_sigaltstack),
  /* clocks, its own identity and usage, randomness */
  ALLOW(__NR_clock_gettime), ALLOW(__NR_clock_getres), ALLOW(__NR_gettimeofday),
  ALLOW(__NR_getrusage), ALLOW(__NR_times), ALLOW(__NR_getpid), ALLOW(__NR_gettid),
  ALLOW(__NR_getrandom),
  /* the end */
  ALLOW(__NR_exit), ALLOW(__NR_exit_group),
#if defined(__x86_64__)
  ALLOW(__NR_stat), ALLOW(__NR_lstat), ALLOW(__NR_time),
  READ_ONLY(__NR_open, 1),
#endif
  READ_ONLY(__NR_openat, 2),
  REFUSED,
};

/* call [nr] allowed only when its argument [arg] (32 bits) is one of two values */
#define ONLY_IF(nr, arg, a, b) \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 5), \
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])), \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (a), 1, 0), \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (b), 0, 1), \
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
  REFUSED
#define NEW_NAMESPACES (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET \
  | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

/* The native path's parser and compilers (proofeval_parse; ocamlopt, which runs sh, as,
   gcc, collect2 and ld) need more than an attempt: to start processes and run programs,
   to write, rename and remove files (in their scratch directory, the only writable place
   the sandbox shows), ask whether a descriptor is a terminal, limits of their own. Still
   refused: signals, limits, priorities and memory of other processes, new namespaces,
   sockets, other ioctls, and what no compiler uses (mounts, keys, BPF, ...). */
static struct sock_filter compiler_filter[] = {
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROOFEVAL_ARCH, 1, 0),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
  ALLOW(__NR_brk), ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mremap),
  ALLOW(__NR_mprotect), ALLOW(__NR_madvise),
  ALLOW(__NR_read), ALLOW(__NR_readv), ALLOW(__NR_pread64), ALLOW(__NR_write),
  ALLOW(__NR_writev), ALLOW(__NR_pwrite64), ALLOW(__NR_lseek), ALLOW(__NR_close),
  ALLOW(__NR_fstat), ALLOW(__NR_newfstatat), ALLOW(__NR_statx), ALLOW(__NR_getdents64),
  ALLOW(__NR_openat), ALLOW(__NR_readlinkat), ALLOW(__NR_faccessat), ALLOW(__NR_faccessat2),
  ALLOW(__NR_getcwd), ALLOW(__NR_umask), ALLOW(__NR_unlinkat), ALLOW(__NR_renameat),
  ALLOW(__NR_renameat2), ALLOW(__NR_mkdirat), ALLOW(__NR_fchmod), ALLOW(__NR_fchmodat),
  ALLOW(__NR_ftruncate), ALLOW(__NR_dup), ALLOW(__NR_dup3), ALLOW(__NR_pipe2),
  ALLOW(__NR_rt_sigaction), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
  ALLOW(__NR_sigaltstack),
  ALLOW(__NR_clock_gettime), ALLOW(__NR_clock_getres), ALLOW(__NR_gettimeofday),
  ALLOW(__NR_getrusage), ALLOW(__NR_times), ALLOW(__NR_getpid), ALLOW(__NR_getppid),
  ALLOW(__NR_gettid), ALLOW(__NR_getuid), ALLOW(__NR_geteuid), ALLOW(__NR_getgid),
  ALLOW(__NR_getegid), ALLOW(__NR_getrandom), ALLOW(__NR_uname), ALLOW(__NR_sysinfo),
  ALLOW(__NR_futex), ALLOW(__NR_set_robust_list), ALLOW(__NR_set_tid_address),
  ALLOW(__NR_rseq),
  ALLOW(__NR_execve), ALLOW(__NR_wait4), ALLOW(__NR_exit), ALLOW(__NR_exit_group),
  /* glibc falls back to clone, whose flags a filter can read */
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
  BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NEW_NAMESPACES, 1, 0),
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  REFUSED,
  ONLY_IF(__NR_prlimit64, 0, 0, 0),  /* its own */
  ONLY_IF(__NR_ioctl, 1, TCGETS, TCGETS),  /* isatty */
  ONLY_IF(__NR_fcntl, 1, F_GETFD, F_SETFD),
#if defined(__x86_64__)
  ALLOW(__NR_stat), ALLOW(__NR_lstat), ALLOW(__NR_access), ALLOW(__NR_readlink),
  ALLOW(__NR_open), ALLOW(__NR_unlink), ALLOW(__NR_rename), ALLOW(__NR_mkdir),
  ALLOW(__NR_chmod), ALLOW(__NR_dup2), ALLOW(__NR_pipe), ALLOW(__NR_vfork), ALLOW(__NR_fork),
  ALLOW(__NR_arch_prctl), ALLOW(__NR_time), ALLOW(__NR_getpgrp),
#endif
  REFUSED,
};
#endif

#ifdef PROOFEVAL_ARCH
static void confine(struct sock_filter *filter, size_t length)
{
  struct sock_fprog prog = {(unsigned short)length, filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
      || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    caml_failwith("seccomp failed");
}
#define CONFINE(filter) confine(filter, sizeof filter / sizeof filter[0])
#else
#define CONFINE(filter) caml_failwith("seccomp: unsupported architecture")
#endif

value proofeval_confine_attempt(value unit)
{
  CAMLparam1(unit);
  CONFINE(attempt_filter);
  CAMLreturn(Val_unit);
}

value proofeval_confine_compiler(value unit)
{
  CAMLparam1(unit);
  CONFINE(compiler_filter);
  CAMLreturn(Val_unit);
}
