(* Theorems that carry their number, and the stream their steps are written to, for the
   kernel log (proofeval_kernel_log.ml).

   A HOL Light theorem is a block [Sequent] holding a pair (hypotheses, conclusion).
   The log widens that pair to a triple whose third field, an int the kernel never
   reads, is the theorem's number: positive, the slot of the step that made it in the
   stream an attempt's child writes to its replaying sibling (beyond any slot while that
   step is only kept); negative, a theorem from before the attempt (its serial number,
   negated). OCaml's equality, ordering and
   hashing on theorems read that int, never a derivation.

   In an attempt's child, each step is written in the order the kernel makes them (when,
   see proofeval_kernel_log.ml), into a numbered slot. Slots are freed without a
   finaliser (a closure per value, promoted at the next minor collection: the costliest
   part of the log when it had one): a theorem made in
   the minor heap is found dead or copied out at the end of the next minor collection
   (most die there), and one in the major heap is watched in a weak array, swept now
   and then for the dead; each dead theorem is written as [F n]; a
   term's slot lives as long as the term stays in the cache below, which is the only way
   the child names it again, and an evicted term is written as [G n]. Either record goes
   after the next theorem's record, and the slot is then free for a later record. So the
   child keeps a number per live theorem, not a derivation, and the sibling holds what
   the child's live theorems and cached terms need.

   Nothing here trusts a value to have the shape it should: a value that only looks
   like a theorem (made with Obj.magic, or rewritten in place) carries no number.
   Compiled, because HOL Light's syntax is not OCaml's (its lexer reads the
   all-capitals names of Obj's functions as value names). *)

(* The number a theorem carries, if it has the shape of a theorem that carries one (a
   block of tag 0 and one field, holding a block of tag 0 and three fields whose third is
   an int); else 0, which is no theorem's number. In C: Obj.tag costs a page-table lookup
   (OCaml 4), and premises are read millions of times. *)
external carried : 'thm -> int = "proofeval_carried" [@@noalloc]

(* [th] (a theorem the kernel just made, or one numbered before an attempt: a [Sequent]
   by its type) made to carry [n]. *)
let carry (th : 'thm) (n : int) : unit =
  let th = Obj.repr th in
  let p = Obj.field th 0 in
  if Obj.size p = 3 then Obj.set_field p 2 (Obj.repr n)  (* numbered before: no allocation *)
  else Obj.set_field th 0 (Obj.repr (Obj.field p 0, Obj.field p 1, n))

(* ---- the stream, in an attempt's child ---- *)

let channel : out_channel option ref = ref None

(* Called when the steps cannot be written: the child must end there (an answer's
   code must not catch the failure and go on with a stream missing a record). *)
let broken : (unit -> unit) ref = ref (fun () -> exit 4)

let flush_at = 65536

(* The records not yet sent: the first [used] bytes of [out]. Each record makes room for
   itself first, so its bytes are then written unchecked. *)
let out = ref (Bytes.create (2 * flush_at))
let used = ref 0

let grow k =
  let bigger = Bytes.create (2 * (!used + k)) in
  Bytes.blit !out 0 bigger 0 !used;
  out := bigger

let room k = if !used + k > Bytes.length !out then grow k

let send () =
  (match !channel with Some oc -> output oc !out 0 !used | None -> ());
  used := 0

(* A number, as LEB128: seven bits a byte, low first, the high bit set on all but the
   last. Never negative, so at most [num_room] bytes. Written at [pos] of [buf], which
   has room; the position after it is returned. *)
let num_room = 9

let rec num_at buf pos n =
  if n < 128 then (Bytes.unsafe_set buf pos (Char.unsafe_chr n); pos + 1)
  else begin
    Bytes.unsafe_set buf pos (Char.unsafe_chr (n land 127 lor 128));
    num_at buf (pos + 1) (n lsr 7)
  end

let num n = used := num_at !out !used n

(* A record's kind (a byte, see proofeval_replay.ml) and slot, with room for [k] more
   numbers; the position after them is returned. *)
let head kind slot k =
  room (1 + num_room * (1 + k));
  let buf = !out in
  Bytes.unsafe_set buf !used kind;
  num_at buf (!used + 1) slot

(* One record: its kind, its slot, then its names (each its length, then its bytes) and
   its numbers. The records with no names and at most two numbers, nearly all, and
   those of variables and constants have their own functions. *)
let put kind slot names nums =
  let k = List.length nums + List.length names in
  room (1 + num_room * (1 + k) + List.fold_left (fun l s -> l + String.length s) 0 names);
  used := head kind slot k;
  List.iter
    (fun s ->
      let l = String.length s in
      num l; Bytes.blit_string s 0 !out !used l; used := !used + l)
    names;
  List.iter num nums

(* A variable's or constant's record: its name, then its type's slot. *)
let put_named kind slot name a =
  let l = String.length name in
  room (1 + num_room * 3 + l);
  let buf = !out in
  let pos = num_at buf (head kind slot 2) l in
  Bytes.blit_string name 0 buf pos l;
  used := num_at buf (pos + l) a

(* [head] may grow the buffer: [!out] is read after it. *)
let put0 kind slot = used := head kind slot 0
let put1 kind slot a = let pos = head kind slot 1 in used := num_at !out pos a
let put2 kind slot a b =
  let pos = head kind slot 2 in let buf = !out in used := num_at buf (num_at buf pos a) b

(* A stack of ints that allocates only to grow: a slot is dropped and freed for every
   theorem and term the child stops naming, millions in a heavy proof. *)
type stack = { mutable items : int array; mutable size : int }

let stack () = { items = Array.make 1024 0; size = 0 }

let grow_stack s =
  let bigger = Array.make (2 * s.size) 0 in
  Array.blit s.items 0 bigger 0 s.size;
  s.items <- bigger

let push s n =
  if s.size = Array.length s.items then grow_stack s;
  Array.unsafe_set s.items s.size n;
  s.size <- s.size + 1

(* The numbers of a record with more than two (INST's, INST_TYPE's), gathered as they
   are found, without a list; [put_gathered] writes them. *)
let gathered = stack ()
let gather n = push gathered n

let put_gathered kind slot =
  let k = gathered.size in
  used := head kind slot k;
  for i = 0 to k - 1 do used := num_at !out !used (Array.unsafe_get gathered.items i) done;
  gathered.size <- 0

(* Slots: the highest used, and those freed (written as freed) for reuse. *)
let high = ref 0
let free_slots = stack ()

let free_slot n = push free_slots n

let take () =
  let k = free_slots.size - 1 in
  if k >= 0 then (free_slots.size <- k; Array.unsafe_get free_slots.items k)
  else (incr high; !high)

(* Slots no longer named: theorems positive, terms negative, written (by [release])
   only between records, since a record being made may still name them. *)
let dropped = stack ()

let drop n = push dropped n

(* Theorem slots, watched: a weak array per [chunk] slots. *)
let chunk_bits = 16
let chunk = 1 lsl chunk_bits
let watched : Obj.t Weak.t array ref = ref [| Weak.create chunk |]  (* made before any fork *)

let dead n = not (Weak.check !watched.(n lsr chunk_bits) (n land (chunk - 1)))

(* The slots of the theorems made since the last sweep ("young"), of those that were
   alive at the last sweep ("middle": a theorem dead since its last minor collection only
   shows as dead after the next one, so each gets a second look) and of the older ones
   still alive then. Most theorems die young: young and middle are swept every
   [young_size] theorems; the old when they have doubled since their last sweep. So a
   sweep costs O(1) a theorem, and the sibling holds at most twice the child's live
   theorems and [2 * young_size] more. *)
let young_size = 8192
let young = Array.make young_size 0
let young_count = ref 0
let middle = Array.make young_size 0
let middle_count = ref 0
let old = stack ()
let old_swept = ref 0

let keep_old n = push old n

(* Kept slots are pushed back in place: position i is written only after it is read. *)
let sweep_old () =
  let l = old.size in
  old.size <- 0;
  for i = 0 to l - 1 do
    let n = old.items.(i) in if dead n then drop n else keep_old n
  done;
  old_swept := old.size

let sweep_young () =
  for i = 0 to !middle_count - 1 do
    let n = middle.(i) in if dead n then drop n else keep_old n
  done;
  middle_count := 0;
  for i = 0 to young_size - 1 do
    let n = young.(i) in
    if dead n then drop n else (middle.(!middle_count) <- n; incr middle_count)
  done;
  young_count := 0;
  if old.size > 2 * max young_size !old_swept then sweep_old ()

let watch_weakly (th : Obj.t) (n : int) =
  let c = n lsr chunk_bits in
  if c >= Array.length !watched then
    watched := Array.append !watched (Array.init (c + 1 - Array.length !watched) (fun _ -> Weak.create chunk));
  Weak.set !watched.(c) (n land (chunk - 1)) (Some th);
  if !young_count = young_size then sweep_young ();
  young.(!young_count) <- n; incr young_count

(* A theorem in the minor heap is watched by the collector instead (proofeval_stubs.c):
   at the end of the next minor collection its slot is found dead, or it is found
   copied out and waits to be watched weakly. *)
external watch_young : 'thm -> int -> bool = "proofeval_watch_young" [@@noalloc]
external waiting : unit -> int = "proofeval_waiting" [@@noalloc]
external promoted_count : unit -> int = "proofeval_promoted_count" [@@noalloc]
external promoted : int -> Obj.t = "proofeval_promoted" [@@noalloc]
external promoted_slot : int -> int = "proofeval_promoted_slot" [@@noalloc]
external dead_count : unit -> int = "proofeval_dead_count" [@@noalloc]
external dead_slot : int -> int = "proofeval_dead_slot" [@@noalloc]
external settled : int -> int -> unit = "proofeval_settled" [@@noalloc]

(* Whether [th] is in the minor heap: then its slot is freed only after the next minor
   collection. *)
let watch_theorem (th : 'thm) (n : int) =
  watch_young th n || (watch_weakly (Obj.repr th) n; false)

(* Watching allocates, so a collection may note more meanwhile: counts are read again.
   Only after a theorem's record, as [release]. *)
let settle () =
  let copied = ref 0 and died = ref 0 in
  while !copied < promoted_count () do
    watch_weakly (promoted !copied) (promoted_slot !copied); incr copied
  done;
  while !died < dead_count () do
    let n = dead_slot !died in
    put0 'F' n; free_slot n; incr died
  done;
  settled !copied !died

(* Only after a theorem's record (a premise or term argument may be dropped while its
   user's record is being made). *)
let release () =
  for i = dropped.size - 1 downto 0 do
    let n = dropped.items.(i) in
    if n > 0 then (put0 'F' n; free_slot n)
    else (put0 'G' (-n); free_slot (-n))
  done;
  dropped.size <- 0

(* Terms already written, found by identity, in two caches. Neither can name a term
   that is not the one written: a term pushed out of either is never named again, and
   its slot is dropped.

   These caches, and those of types and sides below, are arrays indexed by address,
   made small in the warm process and made anew four times larger each time an
   attempt's child has written as many theorems as they have entries, up to their size
   for a heavy proof: the child shares the arrays with the warm process, and its first
   write to each of their pages copies that page (made at full size, they had a quick
   FAIL's child copy some 130 pages, spread over them by address). *)
let start_bits = 9  (* a page of ints; over 256 words, so made in the major heap *)
(* The largest sizes: of the old terms' cache, and of every other *)
let old_terms_bits = 16 and cache_bits = 12
let scale = ref start_bits
let entries max_bits = 1 lsl min !scale max_bits

(* A term in the minor heap is keyed by its address, held as an int: the cache does not
   keep it alive, so it is not promoted for the cache's sake (most die young). Its entry
   holds only until the next minor collection, which may move the term or give its
   address to another; the first lookup after one drops them all. *)
external young_key : 'term -> int = "proofeval_young_key" [@@noalloc]
external minor_collections : unit -> int = "proofeval_minor_collections" [@@noalloc]
external young_room : unit -> int = "proofeval_young_room"

(* [k], a young key (the address halved), as an index of a cache of [size] entries *)
let young_index size k = (k lsr 2) land (size - 1)

(* [in_use]: the entries in use, its first [count] *)
type young_terms =
  { keys : int array; slots : int array; in_use : int array; mutable count : int;
    mutable epoch : int }

let young_terms () =
  let n = entries cache_bits in
  { keys = Array.make n 0; slots = Array.make n 0; in_use = Array.make n 0; count = 0;
    epoch = -1 }

let young_terms_cache = ref (young_terms ())

let forget_young c =
  for j = 0 to c.count - 1 do
    let i = c.in_use.(j) in
    if c.slots.(i) > 0 then drop (-c.slots.(i));
    c.keys.(i) <- 0
  done;
  c.count <- 0

let young_entry c k =
  let m = minor_collections () in
  if m <> c.epoch then (forget_young c; c.epoch <- m);
  young_index (Array.length c.keys) k

(* A term in the major heap: a direct-mapped cache that holds its term, so the slot
   stays valid; a term that moved (compaction) is only missed and written again. *)
type old_terms = { term_keys : Obj.t array; term_slots : int array }

let old_terms () =
  let n = entries old_terms_bits in
  { term_keys = Array.make n (Obj.repr 0); term_slots = Array.make n 0 }

let old_terms_cache = ref (old_terms ())

external store_key : Obj.t array -> int -> 'a -> unit = "proofeval_store_key" [@@noalloc]

(* an address read as an int is not a valid int until shifted (which tags it) *)
let index size (v : 'a) = ((Obj.magic v : int) lsr 4) land (size - 1)

let cached (t : 'term) =
  let k = young_key t in
  if k <> 0 then
    let c = !young_terms_cache in
    let i = young_entry c k in
    if c.keys.(i) = k then c.slots.(i) else 0
  else
    let c = !old_terms_cache in
    let i = index (Array.length c.term_keys) t in
    if c.term_keys.(i) == Obj.repr t then c.term_slots.(i) else 0

(* [n] is -1 while [t]'s parts are being written (a term that contains itself). *)
let remember (t : 'term) n =
  let k = young_key t in
  if k <> 0 then begin
    let c = !young_terms_cache in
    let i = young_entry c k in
    let key = c.keys.(i) in
    if key = 0 then (c.in_use.(c.count) <- i; c.count <- c.count + 1)
    else if key <> k && c.slots.(i) > 0 then drop (-c.slots.(i));
    c.keys.(i) <- k;
    c.slots.(i) <- n
  end else begin
    let c = !old_terms_cache in
    let i = index (Array.length c.term_keys) t in
    let evicted = c.term_slots.(i) in
    if evicted > 0 && c.term_keys.(i) != Obj.repr t then drop (-evicted);
    store_key c.term_keys i t;
    c.term_slots.(i) <- n
  end

(* Types already written, by address: a type's slot is never freed, so an entry only
   spares the log a lookup by structure; a type that moved is only missed. A type in the
   minor heap is keyed by its address as an int, valid for the minor collection it was
   noted in: a key holding it would promote it, and most die young. *)
type types =
  { old_keys : Obj.t array; old_slots : int array; young_keys : int array;
    young_epochs : int array; young_slots : int array }

let types () =
  let n = entries cache_bits in
  { old_keys = Array.make n (Obj.repr 0); old_slots = Array.make n 0;
    young_keys = Array.make n 0; young_epochs = Array.make n (-1);
    young_slots = Array.make n 0 }

let types_cache = ref (types ())

let type_cached (y : 'ty) =
  let c = !types_cache in
  let k = young_key y in
  if k <> 0 then
    let i = young_index (Array.length c.young_keys) k in
    if c.young_keys.(i) = k && c.young_epochs.(i) = minor_collections () then
      c.young_slots.(i)
    else 0
  else
    let i = index (Array.length c.old_keys) y in
    if c.old_keys.(i) == Obj.repr y then c.old_slots.(i) else 0

let remember_type (y : 'ty) n =
  let c = !types_cache in
  let k = young_key y in
  if k <> 0 then begin
    let i = young_index (Array.length c.young_keys) k in
    c.young_keys.(i) <- k;
    c.young_epochs.(i) <- minor_collections ();
    c.young_slots.(i) <- n
  end else begin
    let i = index (Array.length c.old_keys) y in
    store_key c.old_keys i y;
    c.old_slots.(i) <- n
  end

(* The sides of theorems made during the attempt: a theorem's conclusion (0), and an
   equation's left (1) and right (2) sides, by the theorem's slot. The kernel makes them
   as new values, two sides often of the same parts (MK_COMB of a theorem with itself),
   which the replay's kernel makes as its own values in its own theorem: a side named
   later is taken from that theorem (record W), not rebuilt from its parts (a copy, or
   the other side, which the replay's kernel would compare along every path with the
   value the child compares at once). Only the sides of a theorem in the minor heap are
   noted, keyed by address as the cache of young terms, and an entry holds until the
   next minor collection: until then the theorem's slot is not freed (see
   [watch_theorem]), so the replay holds the theorem. No allocation. *)
type sides =
  { side_keys : int array; side_epochs : int array;
    side_codes : int array  (* 3 * slot + side *) }

let sides () =
  let n = entries cache_bits in
  { side_keys = Array.make n 0; side_epochs = Array.make n (-1); side_codes = Array.make n 0 }

let sides_cache = ref (sides ())

(* Only for a theorem [watch_theorem] found in the minor heap, before any allocation. *)
let note_side (t : 'term) slot k =
  let key = young_key t in
  if key <> 0 then begin
    let c = !sides_cache in
    let i = young_index (Array.length c.side_keys) key in
    c.side_keys.(i) <- key;
    c.side_epochs.(i) <- minor_collections ();
    c.side_codes.(i) <- 3 * slot + k
  end

(* [t]'s theorem slot and side, as [3 * slot + side], or 0. *)
let side_of (t : 'term) =
  let key = young_key t in
  if key = 0 then 0 else
  let c = !sides_cache in
  let i = young_index (Array.length c.side_keys) key in
  if c.side_keys.(i) = key && c.side_epochs.(i) = minor_collections () then c.side_codes.(i)
  else 0

(* Theorems written, and when the caches grow (see [start_bits]): between records, when
   no term is half written, so that dropping their slots is as a minor collection's. *)
let theorems = ref 0

let grow_caches () =
  scale := !scale + 2;
  forget_young !young_terms_cache;
  Array.iter (fun n -> if n > 0 then drop (-n)) !old_terms_cache.term_slots;
  young_terms_cache := young_terms ();
  old_terms_cache := old_terms ();
  types_cache := types ();
  sides_cache := sides ()

let finish_record () =
  if waiting () > 0 then settle ();
  incr theorems;
  if !theorems > 1 lsl !scale && !scale < old_terms_bits then grow_caches ();
  release ();
  if !used >= flush_at then send ()

(* Writing stops being possible: the child ends, whatever the answer's code catches. *)
let guarded f x = try f x with _ -> !broken (); raise Exit

let start oc die =
  channel := Some oc;
  broken := die

(* The last record; nothing is released after it. The stream is closed here, not at the
   child's exit, which comes only after its memory is torn down. *)
let finish root =
  put0 'E' root;
  send ();
  match !channel with Some oc -> close_out oc | None -> ()
