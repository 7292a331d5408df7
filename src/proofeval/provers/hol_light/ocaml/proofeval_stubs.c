/* What OCaml's Unix library lacks to confine a process: resource limits, death with the
   parent, no inspection through /proc, and a seccomp filter for proof attempts. Then
   huge pages, a pipe's size, and what the kernel log asks of the collector. */
#define _GNU_SOURCE
#define CAML_INTERNALS  /* Is_young and the count of minor collections */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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
#include <caml/version.h>
#include <caml/address_class.h>
#include <caml/misc.h>
#include <caml/roots.h>
#if OCAML_VERSION_MAJOR >= 5
#include <caml/minor_gc.h>
#else
#include <caml/gc_ctrl.h>
#endif

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

/* Orphaned descendants of this process become its children, not the sandbox's first
   process's (on): so a process that loads a context finds every process the context's
   code started, whatever session it left for, and ends it (proofeval_server.ml). */
value proofeval_child_subreaper(value on)
{
  CAMLparam1(on);
  if (prctl(PR_SET_CHILD_SUBREAPER, Bool_val(on) ? 1 : 0, 0, 0, 0) != 0)
    caml_failwith("PR_SET_CHILD_SUBREAPER failed");
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

/* Huge pages for the heap, so that a fork of a warm process costs little.

   A warm process holds some 400 MB of heap in 4 KiB pages: fork() copies about 100,000
   page-table entries and the child's exit tears them down again, some 10 ms each. Held
   in 2 MiB pages the same heap is some 200 entries, and a fork shares them as before
   (a page the child writes is split off and copied 4 KiB at a time). A 2 MiB stretch is
   collapsed when at least half of its pages are present (the collapse adds the others,
   zeroed: the free parts of the collector's chunks, which else kept most of a native
   core's heap in 4 KiB pages) and at least [own] of its 512 pages are this process's
   alone: with 512, memory shared with another warm process stays shared. The stretches
   are then marked not to be collapsed again, so the kernel's background collapsing
   never unshares a fork's pages. Returns the MiB collapsed; 0 where the kernel has no
   MADV_COLLAPSE (before Linux 6.1) or huge pages are off. */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE_PAGE (2UL << 20)
#define PAGE_ENTRIES (HUGE_PAGE / 4096)
#define PM_PRESENT (1ULL << 63)
#define PM_EXCLUSIVE (1ULL << 56)

static int ours(int pagemap, unsigned long start, long own)
{
  uint64_t entries[PAGE_ENTRIES];
  off_t at = (off_t)(start / 4096) * (off_t)sizeof entries[0];
  long mine = 0, present = 0;
  if (pread(pagemap, entries, sizeof entries, at) != (ssize_t)sizeof entries) return 0;
  for (unsigned long i = 0; i < PAGE_ENTRIES; i++) {
    if (entries[i] & PM_PRESENT) present++;
    if (entries[i] & PM_EXCLUSIVE) mine++;
  }
  return mine >= own && present >= PAGE_ENTRIES / 2;
}

/* The 2 MiB stretches of [a, b) that are ours, collapsed; bytes done. */
static unsigned long collapse_range(int pagemap, unsigned long a, unsigned long b, long own)
{
  unsigned long start = (a + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), end = b & ~(HUGE_PAGE - 1);
  unsigned long done = 0;
  if (end <= start) return 0;
  madvise((void *)start, end - start, MADV_HUGEPAGE);
  for (unsigned long at = start; at < end; at += HUGE_PAGE)
    if (ours(pagemap, at, own) && madvise((void *)at, HUGE_PAGE, MADV_COLLAPSE) == 0)
      done += HUGE_PAGE;
  madvise((void *)start, end - start, MADV_NOHUGEPAGE);
  return done;
}

/* Anonymous private writable mappings (the OCaml heap is malloc'd: [heap] or none), read
   whole before any is changed (marking a stretch splits a mapping). */
#define MAX_RANGES 4096
static int anonymous_ranges(unsigned long (*ranges)[2])
{
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  int count = 0;
  if (maps == NULL) return 0;
  while (count < MAX_RANGES && fgets(line, sizeof line, maps) != NULL) {
    unsigned long a, b, offset, inode;
    char perms[8], dev[16], path[256] = "";
    int n = sscanf(line, "%lx-%lx %7s %lx %15s %lu %255s", &a, &b, perms, &offset, dev, &inode,
                   path);
    if (n >= 6 && strcmp(perms, "rw-p") == 0 && inode == 0
        && (path[0] == '\0' || strcmp(path, "[heap]") == 0)) {
      ranges[count][0] = a;
      ranges[count][1] = b;
      count++;
    }
  }
  fclose(maps);
  return count;
}

value proofeval_huge_pages(value own)
{
  CAMLparam1(own);
  static unsigned long ranges[MAX_RANGES][2];
  unsigned long done = 0;
  int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap >= 0) {
    int count = anonymous_ranges(ranges);
    for (int i = 0; i < count; i++) done += collapse_range(pagemap, ranges[i][0], ranges[i][1], Long_val(own));
    close(pagemap);
  }
  CAMLreturn(Val_long(done >> 20));
}

/* The number a theorem carries (proofeval_identity.ml): the third field, an int, of the
   triple in a block of tag 0 and one field; else 0. A forged value's fields are read only
   after the kernel has read them. */
value proofeval_carried(value th)
{
  if (Is_block(th) && (th & (sizeof(value) - 1)) == 0 && Tag_val(th) == 0 && Wosize_val(th) == 1) {
    value p = Field(th, 0);
    if (Is_block(p) && (p & (sizeof(value) - 1)) == 0 && Tag_val(p) == 0 && Wosize_val(p) == 3
        && Is_long(Field(p, 2)))
      return Field(p, 2);
  }
  return Val_long(0);
}

/* For the kernel log's cache of young terms (proofeval_identity.ml): a value in the minor
   heap as a key that is not a pointer (its address with the low bit set: an int to the
   collector), 0 for any other value; and how many minor collections there have been.
   A minor heap address is only reused after a minor collection. */
value proofeval_young_key(value v)
{
  return (Is_block(v) && Is_young(v)) ? (v | 1) : Val_long(0);
}

value proofeval_minor_collections(value unit)
{
  (void)unit;
#if OCAML_VERSION_MAJOR >= 5
  return Val_long(atomic_load(&caml_minor_collections_count));
#else
  return Val_long(Caml_state_field(stat_minor_collections));
#endif
}

/* Words the minor heap has left before its next collection. Not [@@noalloc]: natively
   the allocation pointer lives in a register, and only a full C call stores it. */
value proofeval_young_room(value unit)
{
  (void)unit;
#if OCAML_VERSION_MAJOR >= 5
  return Val_long(((char *)Caml_state->young_ptr - (char *)Caml_state->young_trigger) / sizeof(value));
#else
  return Val_long(((char *)Caml_state_field(young_ptr) - (char *)Caml_state_field(young_trigger)) / sizeof(value));
#endif
}

/* For the kernel log's watch on theorems (proofeval_identity.ml): a theorem made in the
   minor heap is noted here with its slot, not in a weak array, since most die before the
   next minor collection. At the end of that collection, still in the collector, each
   noted block was either copied out (its header is 0 and its first field says where) or
   is dead. The dead slots wait to be freed; the copied theorems wait, as roots, to be
   watched in the weak array, since they may die later. */
struct noted { value *values; intnat *slots; size_t len, cap; };
static struct noted young_theorems, promoted, dead;

static void note(struct noted *n, value v, intnat slot)
{
  if (n->len == n->cap) {
    size_t cap = n->cap ? 2 * n->cap : 4096;
    value *values = realloc(n->values, cap * sizeof(value));
    intnat *slots = realloc(n->slots, cap * sizeof(intnat));
    if (values == NULL || slots == NULL) abort();  /* the child ends: ERROR, never OK */
    n->values = values; n->slots = slots; n->cap = cap;
  }
  n->values[n->len] = v; n->slots[n->len] = slot; n->len++;
}

static caml_timing_hook previous_end_hook;

static void settle_young_theorems(void)
{
  for (size_t i = 0; i < young_theorems.len; i++) {
    value v = young_theorems.values[i];
    if (Hd_val(v) == 0) note(&promoted, Field(v, 0), young_theorems.slots[i]);
    else note(&dead, Val_unit, young_theorems.slots[i]);
  }
  young_theorems.len = 0;
  if (previous_end_hook != NULL) previous_end_hook();
}

#if OCAML_VERSION_MAJOR >= 5
static scan_roots_hook previous_scan;
static void scan_promoted(scanning_action action, scanning_action_flags flags, void *data,
                          caml_domain_state *domain)
{
  for (size_t i = 0; i < promoted.len; i++) action(data, promoted.values[i], &promoted.values[i]);
  if (previous_scan != NULL) previous_scan(action, flags, data, domain);
}
#else
static void (*previous_scan)(scanning_action);
static void scan_promoted(scanning_action action)
{
  for (size_t i = 0; i < promoted.len; i++) action(promoted.values[i], &promoted.values[i]);
  if (previous_scan != NULL) previous_scan(action);
}
#endif

/* Notes [th] with [slot] if it is in the minor heap, and says whether it did. */
value proofeval_watch_young(value th, value slot)
{
  if (!(Is_block(th) && Is_young(th))) return Val_false;
  if (young_theorems.cap == 0) {
    previous_end_hook = caml_minor_gc_end_hook;
    caml_minor_gc_end_hook = settle_young_theorems;
    previous_scan = caml_scan_roots_hook;
    caml_scan_roots_hook = scan_promoted;
  }
  note(&young_theorems, th, Long_val(slot));
  return Val_true;
}

static void forget(struct noted *n, size_t k)
{
  memmove(n->values, n->values + k, (n->len - k) * sizeof(value));
  memmove(n->slots, n->slots + k, (n->len - k) * sizeof(intnat));
  n->len -= k;
}

/* How many copied theorems and dead slots wait; each by its index; then the first ones
   forgotten (a collection may have noted more meanwhile). */
value proofeval_waiting(value unit) { (void)unit; return Val_long(promoted.len + dead.len); }
value proofeval_promoted_count(value unit) { (void)unit; return Val_long(promoted.len); }
value proofeval_promoted(value i) { return promoted.values[Long_val(i)]; }
value proofeval_promoted_slot(value i) { return Val_long(promoted.slots[Long_val(i)]); }
value proofeval_dead_count(value unit) { (void)unit; return Val_long(dead.len); }
value proofeval_dead_slot(value i) { return Val_long(dead.slots[Long_val(i)]); }
value proofeval_settled(value copied, value died)
{
  forget(&promoted, Long_val(copied));
  forget(&dead, Long_val(died));
  return Val_unit;
}

/* keys.(i) <- v for the kernel log's caches of terms and types, without
   the write barrier: v is not in the minor heap, and keys (too large for the minor heap)
   is never read for a value, only compared with one, so the collector loses nothing by
   not darkening the key it replaces; darkening it kept every evicted term alive, and
   marked, for the rest of a major cycle. */
value proofeval_store_key(value keys, value i, value v)
{
  Field(keys, Long_val(i)) = v;
  return Val_unit;
}

/* A pipe's capacity in bytes (F_SETPIPE_SZ), if the system allows it: a larger one is
   only an optimisation, so a refusal is not an error. */
value proofeval_pipe_size(value fd, value bytes)
{
  (void)fcntl(Int_val(fd), F_SETPIPE_SZ, Int_val(bytes));
  return Val_unit;
}
