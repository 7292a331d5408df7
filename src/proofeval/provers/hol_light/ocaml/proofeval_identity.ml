(* Theorems that carry their number, and the stream their steps are written to, for the
   kernel log (proofeval_kernel_log.ml).

   A HOL Light theorem is a block [Sequent] holding a pair (hypotheses, conclusion).
   The log widens that pair to a triple whose third field, an int the kernel never
   reads, is the theorem's number: positive, the slot of the step that made it in the
   stream an attempt's child writes to its replaying sibling; negative, a theorem from
   before the attempt (its serial number, negated). OCaml's equality, ordering and
   hashing on theorems read that int, never a derivation.

   In an attempt's child, each step is written as the kernel makes it, into a numbered
   slot; when the collector drops a theorem (or a term the stream named), a finaliser
   notes its slot, and after the next theorem's record an [F n] (theorem) or [G n]
   (term) record tells the sibling to forget it; the slot is then free for a later
   record. So the child keeps a number per live theorem, not a derivation, and the
   sibling holds what the child's live theorems and terms need.

   Nothing here trusts a value to have the shape it should: a value that only looks
   like a theorem (made with Obj.magic, or rewritten in place) carries no number.
   Compiled, because HOL Light's syntax is not OCaml's (its lexer reads the
   all-capitals names of Obj's functions as value names). *)

let is_sequent th =
  Obj.is_block th && Obj.tag th = 0 && Obj.size th = 1
  && (let p = Obj.field th 0 in
      Obj.is_block p && Obj.tag p = 0 && (Obj.size p = 2 || Obj.size p = 3))

(* The number a theorem carries, if it has the shape of a theorem that carries one. *)
let carried (th : 'thm) : int option =
  let th = Obj.repr th in
  if is_sequent th && Obj.size (Obj.field th 0) = 3 then
    let n = Obj.field (Obj.field th 0) 2 in
    if Obj.is_int n then Some (Obj.obj n) else None
  else None

(* [th] (a theorem the kernel just made, or one numbered before an attempt) made to
   carry [n]. *)
let carry (th : 'thm) (n : int) : unit =
  let th = Obj.repr th in
  if is_sequent th then
    let p = Obj.field th 0 in
    Obj.set_field th 0 (Obj.repr (Obj.field p 0, Obj.field p 1, n))

(* ---- the stream, in an attempt's child ---- *)

let out = Buffer.create 65536
let channel : out_channel option ref = ref None

(* Called when the steps cannot be written: the child must end there (an answer's
   code must not catch the failure and go on with a stream missing a record). *)
let broken : (unit -> unit) ref = ref (fun () -> exit 4)

let flush_at = 65536

let send () =
  match !channel with
  | Some oc -> Buffer.output_buffer oc out; Buffer.clear out
  | None -> Buffer.clear out

(* A number, in decimal, without allocating. *)
let rec add_int n =
  if n >= 10 then add_int (n / 10);
  Buffer.add_char out (Char.unsafe_chr (48 + n mod 10))

(* One record: its kind, its slot, then words and numbers separated by spaces. *)
let put kind slot words ints =
  Buffer.add_string out kind; Buffer.add_char out ' '; add_int slot;
  List.iter (fun w -> Buffer.add_char out ' '; Buffer.add_string out w) words;
  List.iter (fun n -> Buffer.add_char out ' '; add_int n) ints;
  Buffer.add_char out '\n'

(* Slots: the highest used, and those freed (written as freed) for reuse. *)
let high = ref 0
let free_slots = ref []

let take () =
  match !free_slots with
  | n :: rest -> free_slots := rest; n
  | [] -> incr high; !high

(* Slots whose value the collector dropped: theorems positive, terms negative. A
   finaliser only conses here (finalisers may run inside any allocation, in the middle
   of a record); [release] writes them, between records. *)
let dropped : int list ref = ref []

let drop n = dropped := n :: !dropped

(* Only after a theorem's record: every record naming a dropped slot is then written
   (a premise or term argument may die while its user's record is being made). *)
let rec release () =
  let l = !dropped in
  dropped := [];
  if l <> [] then begin
    List.iter
      (fun n ->
        if n > 0 then (put "F" n [] []; free_slots := n :: !free_slots)
        else (put "G" (-n) [] []; free_slots := (-n) :: !free_slots))
      l;
    release ()
  end

let finish_record () =
  release ();
  if Buffer.length out >= flush_at then send ()

let watch_theorem (th : 'thm) (n : int) = Gc.finalise_last (fun () -> drop n) th

(* A term in static data (a constant of compiled code) is never collected. *)
let watch_term (t : 'term) (n : int) =
  try Gc.finalise_last (fun () -> drop (-n)) t with Invalid_argument _ -> ()

(* Terms already written, found by identity: a direct-mapped cache indexed by address.
   An entry holds its term, so a cached term is alive and its slot still valid; a term
   that moved (the minor heap, compaction) is only missed and written again. *)
let cache_bits = 16
let cache_keys : Obj.t array = Array.make (1 lsl cache_bits) (Obj.repr 0)
let cache_slots = Array.make (1 lsl cache_bits) 0

(* an address read as an int is not a valid int until shifted (which tags it) *)
let index (t : 'term) = ((Obj.magic t : int) lsr 4) land ((1 lsl cache_bits) - 1)

let cached (t : 'term) =
  let i = index t in
  if cache_keys.(i) == Obj.repr t then cache_slots.(i) else 0

let remember (t : 'term) n =
  let i = index t in
  cache_keys.(i) <- Obj.repr t;
  cache_slots.(i) <- n

(* Writing stops being possible: the child ends, whatever the answer's code catches. *)
let guarded f x = try f x with _ -> !broken (); raise Exit

let start oc die =
  channel := Some oc;
  broken := die

(* The last record; nothing is released after it. *)
let finish root =
  put "END" root [] [];
  send ();
  match !channel with Some oc -> flush oc | None -> ()
