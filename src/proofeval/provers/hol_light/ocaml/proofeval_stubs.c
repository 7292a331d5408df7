/* Resource limits for a forked proof attempt: OCaml's Unix library has no setrlimit. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
