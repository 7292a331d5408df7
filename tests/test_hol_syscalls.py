"""The system calls an attempt may make: an allow-list of what OCaml code needs to compute
and report its verdict; every other call fails with EPERM.

The tests do not lean on layer 1 (the parse-tree check) or on OCaml's type safety: the
context below can make any system call with any arguments, as code that has broken type
safety and owns its process's memory can. Natively it declares C functions of libc
directly (`external` reaches any C symbol); in bytecode it loads a small C library built
here. Each refused family is first made from the warm process, which no filter
confines, where it does not fail with EPERM: so each test could fail.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from tests.conftest import on_both_paths, with_context

hol_base, core = on_both_paths()  # every test here runs on the bytecode and the native path

EPERM = 1

if platform.machine() != "x86_64":
    pytest.skip("the system call numbers below are x86_64's", allow_module_level=True)

# What the context offers: sys NR [|args|] is the call's result, or -errno.
COMMON = r"""
let keep = ref [];;
let buf n = let b = Bytes.make (max 4096 n) '\000' in keep := b :: !keep; address_of b;;
let ptr s = let b = Bytes.make 4096 '\000' in Bytes.blit_string s 0 b 0 (String.length s);
  keep := b :: !keep; address_of b;;
let fail_with s = FAIL_TAC ("<<" ^ s ^ ">>");;
let my_nice = 20 - sys 140 [|0; 0|];;
(* struct sched_attr of 48 bytes: SCHED_OTHER at this nice value *)
let attr_nice n = let b = Bytes.make 4096 '\000' in
  Bytes.set_int32_le b 0 48l; Bytes.set_int32_le b 16 (Int32.of_int n);
  keep := b :: !keep; address_of b;;
"""

NATIVE = r"""
external c_syscall : (int [@untagged]) -> (int [@untagged]) -> (int [@untagged])
  -> (int [@untagged]) -> (int [@untagged]) -> (int [@untagged])
  = "proofeval_test_unavailable" "syscall" [@@noalloc];;
external c_errno : unit -> (int [@untagged])
  = "proofeval_test_unavailable" "__errno_location" [@@noalloc];;
external c_memcpy : bytes -> (int [@untagged]) -> (int [@untagged]) -> (int [@untagged])
  = "proofeval_test_unavailable" "memcpy" [@@noalloc];;
let address_of b = c_memcpy b 0 0;;
let sys nr args =
  let a i = if i < Array.length args then args.(i) else 0 in
  let r = c_syscall nr (a 0) (a 1) (a 2) (a 3) in
  if r <> -1 then r
  else
    let e = Bytes.make 8 '\000' in
    ignore (c_memcpy e (c_errno ()) 4);
    - Int32.to_int (Bytes.get_int32_le e 0);;
"""

STUBS_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <caml/mlvalues.h>
value rawsys_call(value nr, value args)
{
  long a[4] = {0, 0, 0, 0};
  for (mlsize_t i = 0; i < Wosize_val(args) && i < 4; i++) a[i] = Long_val(Field(args, i));
  long r = syscall(Long_val(nr), a[0], a[1], a[2], a[3]);
  return Val_long(r == -1 ? -errno : r);
}
value rawsys_address(value b) { return Val_long((long)Bytes_val(b)); }
"""

STUBS_ML = """
external call : int -> int array -> int = "rawsys_call"
external address : bytes -> int = "rawsys_address"
"""


def bytecode_library(where: Path) -> str:
    """A bytecode library that makes raw system calls; the context text that loads it."""
    (where / "rawsys_stubs.c").write_text(STUBS_C)
    (where / "rawsys.ml").write_text(STUBS_ML)
    for cmd in [
        ["ocamlc", "-c", "rawsys_stubs.c"],
        ["ocamlmklib", "-o", "rawsys", "rawsys_stubs.o"],
        ["ocamlc", "-c", "rawsys.ml"],
        ["ocamlc", "-a", "-o", "rawsys.cma", "rawsys.cmo", "-dllib", "-lrawsys",
         "-dllpath", str(where)],
    ]:  # fmt: skip
        subprocess.run(cmd, cwd=where, check=True, capture_output=True)
    return (
        f'#directory "{where}";;\n#load "rawsys.cma";;\n'
        "let sys = Rawsys.call;;\nlet address_of = Rawsys.address;;\n"
    )


@pytest.fixture(scope="module")
def raw(hol_base: WarmProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmProcess]:
    if hol_base.launcher.native is not None:
        header = NATIVE
    else:
        header = bytecode_library(tmp_path_factory.mktemp("rawsys"))
    proc = with_context(hol_base, header + COMMON)
    assert proc.add_goal("g", "`!n. n + 0 = n`") is None
    yield proc
    proc.close()


def in_attempt(proc: WarmProcess, call: str) -> int:
    out = proc.check("g", f"(fun g -> fail_with (string_of_int ({call})) g)", 20.0, 2048)
    assert out.verdict == Verdict.FAIL, out
    said = 'the proof failed: "'  # then the answer's own text, quoted
    assert out.message.startswith(said) and out.message.endswith('"'), out
    return int(out.message[len(said) : -1].strip("<>"))


def in_warm_process(proc: WarmProcess, call: str) -> int:
    return int(proc.eval_string(f"(string_of_int ({call}))"))


# family: the call (x86_64 numbers), made harmless where it would succeed unconfined
REFUSED = {
    "signals to another process": "sys 62 [|1; 0|]",  # kill(1, 0): the sandbox's first
    "another process's resource limits": "sys 302 [|1; 4; 0; buf 16|]",  # prlimit64, read
    "scheduling priority": "sys 141 [|0; 0; my_nice|]",  # setpriority to what it is
    "scheduling policy": "sys 314 [|0; attr_nice my_nice; 0|]",  # sched_setattr, as it is
    "another process's memory": "sys 310 [|1; 0; 0; 0|]",  # process_vm_readv of nothing
    "a descriptor for a process": "sys 434 [|1; 0|]",  # pidfd_open
    "a new process": "sys 56 [|0x800; 0; 0; 0|]",  # clone: CLONE_SIGHAND alone is EINVAL
    "running a program": "sys 59 [|0; 0; 0|]",  # execve(NULL): EFAULT
    "sockets": "sys 41 [|1; 1; 0|]",  # socket(AF_UNIX, SOCK_STREAM)
    "removing a file": 'sys 263 [|-100; ptr "/usr/proofeval-none"; 0|]',  # unlinkat
    "making a directory": 'sys 258 [|-100; ptr "/usr/proofeval-none"; 0o700|]',  # mkdirat
    "truncating a descriptor": "sys 77 [|0; 0|]",  # ftruncate of /dev/null, read-only
    "terminal control": "sys 16 [|0; 0x5412; buf 8|]",  # ioctl TIOCSTI on /dev/null
    "namespaces": "sys 272 [|0|]",  # unshare(0): nothing to do
    "entering a namespace": "sys 308 [|-1; 0|]",  # setns: EBADF
    "an anonymous file": 'sys 319 [|ptr "x"; 0|]',  # memfd_create
    "the working directory": 'sys 80 [|ptr "/proofeval-none"|]',  # chdir: ENOENT
    "sleeping": "sys 35 [|buf 16; 0|]",  # nanosleep for zero seconds
}


@pytest.mark.parametrize("family", list(REFUSED))
def test_a_call_outside_the_allow_list_is_refused(raw: WarmProcess, family: str) -> None:
    call = REFUSED[family]
    assert in_warm_process(raw, call) != -EPERM, "the control: unconfined, it is not refused"
    assert in_attempt(raw, call) == -EPERM


def test_writing_and_reading_the_time_and_its_own_pid_are_allowed(raw: WarmProcess) -> None:
    assert in_attempt(raw, "sys 39 [||]") > 0  # getpid
    assert in_attempt(raw, "sys 228 [|1; buf 16|]") == 0  # clock_gettime(MONOTONIC)
    assert in_attempt(raw, 'sys 1 [|2; ptr "x"; 1|]') == 1  # write one byte to stderr


@pytest.mark.parametrize("flags", [0o1, 0o2, 0o100, 0o1000, 0o2000])
def test_a_file_opens_only_for_reading(raw: WarmProcess, flags: int) -> None:
    """O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND on a file that reading may open."""
    assert in_attempt(raw, 'sys 257 [|-100; ptr "/dev/null"; 0|]') >= 0  # openat, read
    assert in_attempt(raw, f'sys 257 [|-100; ptr "/dev/null"; {flags}|]') == -EPERM
    assert in_attempt(raw, f'sys 2 [|ptr "/dev/null"; {flags}|]') == -EPERM  # open


# --- the native path's parser and compilers --------------------------------------------

# Natively: a child of the warm process confined as the parser and the compilers are,
# then making the call; what it returned.
AS_COMPILER = r"""
let as_compiler nr args =
  let r, w = Unix.pipe () in
  match Unix.fork () with
  | 0 ->
      Unix.close r;
      (try
         Proofeval_tool_confinement.confine_compiler ();
         let v = string_of_int (sys nr args) in
         ignore (Unix.write_substring w v 0 (String.length v))
       with _ -> ());
      exit 0  (* Unix._exit, which HOL Light's lexer reads as a constructor *)
  | pid ->
      Unix.close w;
      let b = Bytes.create 64 in
      let n = Unix.read r b 0 64 in
      Unix.close r;
      ignore (Unix.waitpid [] pid);
      int_of_string (Bytes.sub_string b 0 n);;
"""

REFUSED_TO_COMPILERS = {
    family: REFUSED[family]
    for family in [
        "signals to another process",
        "another process's resource limits",
        "scheduling priority",
        "scheduling policy",
        "another process's memory",
        "a descriptor for a process",
        "sockets",
        "terminal control",
        "namespaces",
        "entering a namespace",
        "an anonymous file",
    ]
} | {"a process in new namespaces": "sys 56 [|0x10000800; 0; 0; 0|]"}  # CLONE_NEWUSER


@pytest.fixture(scope="module")
def compiler_view(raw: WarmProcess) -> Iterator[WarmProcess]:
    if raw.launcher.native is None:
        pytest.skip("the parser and the compilers run apart only on the native path")
    proc = with_context(raw, AS_COMPILER)
    yield proc
    proc.close()


@pytest.mark.parametrize("family", list(REFUSED_TO_COMPILERS))
def test_the_compilers_filter_refuses(compiler_view: WarmProcess, family: str) -> None:
    call = REFUSED_TO_COMPILERS[family]
    assert in_warm_process(compiler_view, call) != -EPERM
    assert in_warm_process(compiler_view, f"as_compiler {call[4:]}") == -EPERM


def test_the_compilers_filter_allows_their_own_limits(compiler_view: WarmProcess) -> None:
    assert in_warm_process(compiler_view, "as_compiler 302 [|0; 4; 0; buf 16|]") == 0
    assert in_warm_process(compiler_view, "as_compiler 39 [||]") > 0
