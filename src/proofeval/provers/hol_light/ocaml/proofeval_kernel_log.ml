(* Kernel provenance, loaded right after fusion.ml (HOL Light syntax).

   Before an attempt (the core and the context) a theorem is only noted in a weak
   array; the ones alive when an attempt is forked are numbered, and carry that number.
   Inside an attempt's child whose OK is replayed, every inference is written in the
   order the kernel makes them (see proofeval_identity.ml; a quick attempt's only once
   it ends OK, see [defer]), into a pipe to a clean sibling process that replays each
   through its own kernel as it arrives (see proofeval_replay.ml): the
   rule, the slots of its premises and of its term arguments (written before it, once
   per term value while it stays in a small cache). The theorem carries its slot; the
   collector's dropping a theorem, or a term's leaving the cache, frees its slot in the
   sibling. A value that only looks like a theorem carries no number and is written as
   FORGED, which does not replay. Nothing here is trusted to be intact in the child; the
   replay trusts only itself and the serial table of the process the attempt was forked
   from. *)

module Proofeval_kernel_log = struct
  module Identity = Proofeval_identity

  let recording = ref false

  (* Before recording, a new theorem only goes into a weak array: the ones still alive
     when an attempt is forked are numbered then. Numbering each one here instead would
     slow loading by a third (the core alone makes 14 million theorems). *)
  let chunk = 65536
  let chunks : thm Weak.t list ref = ref []
  let current = ref (Weak.create chunk)
  let filled = ref 0
  let kept = ref 1
  let changed = ref false

  let live_in ws =
    List.concat_map
      (fun w -> List.filter_map (fun i -> Weak.get w i) (List.init (Weak.length w) Fun.id))
      ws

  (* Drop the dead: most theorems die young, so the array stays near the live set. *)
  let compact () =
    let live = live_in !chunks in
    let n = List.length live in
    let packed = Array.init ((n + chunk - 1) / chunk) (fun _ -> Weak.create chunk) in
    List.iteri (fun i th -> Weak.set packed.(i / chunk) (i mod chunk) (Some th)) live;
    chunks := Array.to_list packed;
    kept := 1 + Array.length packed

  let note_old th =
    if !filled = chunk then begin
      chunks := !current :: !chunks;
      current := Weak.create chunk;
      filled := 0;
      if List.length !chunks > 2 * !kept + 16 then compact ()
    end;
    Weak.set !current !filled (Some th);
    incr filled;
    changed := true

  let olds : (int, thm) Hashtbl.t = Hashtbl.create 1

  (* Number the theorems alive now; in the warm process, never in an attempt's child.
     Each carries its number, negated, from then on. *)
  let refresh_olds () =
    if !changed then begin
      Gc.full_major ();
      Hashtbl.reset olds;
      List.iteri
        (fun i th -> Hashtbl.add olds (i + 1) th; Identity.carry th (-(i + 1)))
        (live_in (!current :: !chunks));
      changed := false
    end

  (* ---- the steps, written as the kernel makes them (see proofeval_identity.ml) ---- *)

  (* A record of its own slot. *)
  let record kind words ints = let n = Identity.take () in Identity.put kind n words ints; n
  let record1 kind a = let n = Identity.take () in Identity.put1 kind n a; n
  let record2 kind a b = let n = Identity.take () in Identity.put2 kind n a b; n
  let named kind name a = let n = Identity.take () in Identity.put_named kind n name a; n

  (* Equal types are written once (their slots are never freed), found by their
     constructor and the slots of their arguments: a type that instantiation has just
     made is new only near its top, so this reads a few nodes where hashing and
     comparing its whole structure read them all. *)
  module Shapes = Hashtbl.Make (struct
    type t = string * int list  (* a type variable's list is [0], which is no slot *)
    let equal (a, xs) (b, ys) = String.equal a b && List.equal Int.equal xs ys
    let hash (name, ids) = List.fold_left (fun h i -> 31 * h + i) (Hashtbl.hash name) ids land max_int
  end)

  let shapes = Shapes.create 256

  let rec ty t =
    let k = Identity.type_cached t in
    if k > 0 then k else
    let name, ids = match t with Tyvar name -> (name, [0]) | Tyapp (name, args) -> (name, List.map ty args) in
    let i =
      try Shapes.find shapes (name, ids) with Not_found ->
        let i =
          match t with
          | Tyvar _ -> record 'Y' [name] []
          | Tyapp _ -> record 'K' [name] (List.length ids :: ids) in
        Shapes.add shapes (name, ids) i; i in
    Identity.remember_type t i; i

  (* A term made to contain itself has no end: one found inside itself (marked -1 in the
     cache while its parts are written) or deeper than this is not written (the child
     ends; the verdict is ERROR, never OK). *)
  let max_depth = 1 lsl 22

  let rec tm_at depth t =
    let k = Identity.cached t in
    if k > 0 then k
    else if k < 0 then failwith "a term that contains itself"
    else if depth > max_depth then failwith "a term too deep to write"
    else
      let s = Identity.side_of t in
      if s > 0 then (let i = record2 'W' (s / 3) (s mod 3) in Identity.remember t i; i) else
      let () = Identity.remember t (-1) in
      let i =
        match t with
        | Var (n, y) -> let yi = ty y in named 'V' n yi
        | Const (n, y) -> let yi = ty y in named 'C' n yi
        | Comb (f, x) ->
            let fi = tm_at (depth + 1) f in let xi = tm_at (depth + 1) x in record2 'A' fi xi
        | Abs (v, b) ->
            let vi = tm_at (depth + 1) v in let bi = tm_at (depth + 1) b in record2 'L' vi bi in
      Identity.remember t i;
      i

  let tm t = tm_at 0 t

  (* Theorems from before the attempt, by serial number: one OLD record each, its slot
     kept here (a table by open addressing, under half full, that hashes no value). A
     serial beyond the numbered ones (a forged number) gets a record each time; the
     replay finds no such theorem. *)
  let old_serials = ref (Array.make 256 0) and old_slots = ref (Array.make 256 0)
  let old_count = ref 0

  let rec old_index serials serial i =
    if serials.(i) = serial || serials.(i) = 0 then i
    else old_index serials serial ((i + 1) land (Array.length serials - 1))

  let find_old serial =
    let serials = !old_serials in old_index serials serial (serial land (Array.length serials - 1))

  let rec add_old serial k =
    if 2 * (!old_count + 1) > Array.length !old_serials then begin
      let serials = !old_serials and slots = !old_slots in
      old_serials := Array.make (2 * Array.length serials) 0;
      old_slots := Array.make (2 * Array.length serials) 0;
      old_count := 0;
      Array.iteri (fun i s -> if s > 0 then add_old s slots.(i)) serials
    end;
    let i = find_old serial in
    !old_serials.(i) <- serial; !old_slots.(i) <- k; incr old_count

  let old_slot serial =
    if serial < 1 || serial > Hashtbl.length olds then record1 'O' (serial land max_int)
    else
      let i = find_old serial in
      if !old_serials.(i) = serial then !old_slots.(i)
      else (let k = record1 'O' serial in add_old serial k; k)

  (* A premise's slot: its own, its OLD record's, or a FORGED record's (a value that only
     looks like a theorem carries no number: the replay stops there). *)
  let slot (th : thm) =
    let n = Identity.carried th in
    if n > 0 then n
    else if n < 0 then old_slot (-n)
    else (let n = Identity.take () in Identity.put0 'Z' n; n)

  (* [th], just made by the kernel and written as the record of slot [n] (the premises'
     and terms' slots it names are written before it), numbered. *)
  let numbered th n =
    Identity.carry th n;
    if Identity.watch_theorem th n then begin
      let c = Hol.concl th in
      Identity.note_side c n 0;
      match c with
      | Comb (Comb (Const ("=", _), l), r) -> Identity.note_side l n 1; Identity.note_side r n 2
      | _ -> ()
    end;
    Identity.finish_record ()

  (* [th] written as [rule] of no number, one or two. *)
  let made0 th rule = let n = Identity.take () in Identity.put0 rule n; numbered th n
  let made1 th rule a = let n = Identity.take () in Identity.put1 rule n a; numbered th n
  let made2 th rule a b = let n = Identity.take () in Identity.put2 rule n a b; numbered th n

  (* Off in an attempt's child whose OK is not replayed (--replay off): nothing is noted. *)
  let noting = ref true

  (* An attempt's first steps are only kept: most quick attempts fail, and a FAIL needs
     no record. They are written, in order, when the attempt ends OK ([end_steps]),
     before a declaration, after [keep_max] steps, or when the minor heap is nearly full:
     the collector would copy the kept theorems and terms out of it, and the log then
     treats them as old (a weak array for each theorem, the smaller cache of old terms),
     which cost an OK of ARITH_TAC some 40% more CPU. Meanwhile each theorem
     carries a number of its own beyond any slot, so that OCaml's equality tells
     theorems apart as it does once they are written. *)
  let keeping = ref false
  let kept_steps = ref [||]  (* each kept theorem, then its write *)
  let kept = ref 0
  let kept_since = ref 0  (* the minor collections' count when keeping began *)
  let keep_max = 65536 and keep_room = 32768  (* words left in the minor heap *)
  let unwritten = 1 lsl 40

  (* Entries are cleared, not only dropped: the collector remembers each young value
     stored into an array of the major heap, and would copy it out at its next
     collection, alive or not. *)
  let clear a n = Array.fill a 0 n (Obj.repr 0)

  let write_kept () =
    if !keeping then begin
      keeping := false;
      let a = !kept_steps in
      for i = 0 to !kept - 1 do
        Identity.guarded (Obj.obj a.(2 * i + 1) : thm -> unit) (Obj.obj a.(2 * i) : thm)
      done;
      clear a (2 * !kept)
    end

  let keep th write =
    let k = !kept in
    if 2 * k = Array.length !kept_steps then begin
      let a = !kept_steps and b = Array.make (max 256 (4 * k)) (Obj.repr 0) in
      Array.blit a 0 b 0 (2 * k);
      clear a (2 * k);
      kept_steps := b
    end;
    !kept_steps.(2 * k) <- Obj.repr th;
    !kept_steps.(2 * k + 1) <- Obj.repr write;
    kept := k + 1;
    Identity.carry th (unwritten + k)

  let defer th write =
    if !kept = keep_max || Identity.young_room () < keep_room
       || Identity.minor_collections () <> !kept_since
    then (write_kept (); Identity.guarded write th)
    else keep th write

  (* In an attempt's child, before the attempt: the steps go to [oc], and [die] ends the
     child when they cannot (replay on); or nothing is noted (replay off). *)
  let record_steps = function
    | Some (oc, die) ->
        Identity.start oc die;
        recording := true;
        keeping := true;
        kept_since := Identity.minor_collections ()
    | None -> noting := false

  (* The last record, once the child has its verdict: the theorem it proved. *)
  let end_steps th =
    write_kept ();
    Identity.guarded (fun th -> Identity.finish (slot th)) th

  let log th write =
    if !recording then (if !keeping then defer th write else Identity.guarded write th)
    else if !noting then note_old th;
    th

  (* [th] written as [rule] of [a]'s slot, the number of [theta]'s pairs, and the slots
     ([f]) of each pair. *)
  let made_pairs th rule a f theta =
    let ia = slot a in
    Identity.gather ia; Identity.gather (List.length theta);
    List.iter (fun (x, y) -> let i = f x in let j = f y in Identity.gather i; Identity.gather j) theta;
    let n = Identity.take () in Identity.put_gathered rule n; numbered th n

  let refl t =
    log (Hol.REFL t) (fun th -> let ti = tm t in made1 th 'r' ti)
  let trans a b =
    log (Hol.TRANS a b) (fun th -> let ia = slot a in let ib = slot b in made2 th 't' ia ib)
  let mk_comb (a, b) =
    log (Hol.MK_COMB (a, b)) (fun th -> let ia = slot a in let ib = slot b in made2 th 'm' ia ib)
  let abs v a =
    log (Hol.ABS v a) (fun th -> let vi = tm v in let ia = slot a in made2 th 'a' vi ia)
  let beta t = log (Hol.BETA t) (fun th -> let ti = tm t in made1 th 'b' ti)
  let assume t = log (Hol.ASSUME t) (fun th -> let ti = tm t in made1 th 's' ti)
  let eq_mp a b =
    log (Hol.EQ_MP a b) (fun th -> let ia = slot a in let ib = slot b in made2 th 'e' ia ib)
  let deduct a b =
    log (Hol.DEDUCT_ANTISYM_RULE a b)
      (fun th -> let ia = slot a in let ib = slot b in made2 th 'd' ia ib)
  let inst theta a = log (Hol.INST theta a) (fun th -> made_pairs th 'i' a tm theta)
  let inst_type theta a = log (Hol.INST_TYPE theta a) (fun th -> made_pairs th 'j' a ty theta)
  let new_axiom t = log (Hol.new_axiom t) (fun th -> made0 th 'X')

  (* Declarations make no theorem and add no axiom: written once the kernel has made
     them (a constant's type before it), so that the replay makes them too, before the
     records that name them. They fill no slot (0). *)
  let new_type (name, arity) =
    Hol.new_type (name, arity);
    if !recording then begin
      write_kept ();
      Identity.guarded (fun () -> Identity.put 'T' 0 [name] [arity]) ()
    end
  let new_constant (name, y) =
    Hol.new_constant (name, y);
    if !recording then begin
      write_kept ();
      Identity.guarded (fun () -> let yi = ty y in Identity.put 'N' 0 [name] [yi]) ()
    end
  let new_basic_definition t =
    log (Hol.new_basic_definition t) (fun th -> let ti = tm t in made1 th 'D' ti)

  (* Two theorems of one step: both records are written before any slot is released. *)
  let new_basic_type_definition tyname (abs_name, rep_name) a =
    let th1, th2 = Hol.new_basic_type_definition tyname (abs_name, rep_name) a in
    if !recording then begin
      write_kept ();
      Identity.guarded (fun () ->
        let ia = slot a in
        let write th first =
          let n = Identity.take () in
          Identity.put 'P' n [tyname; abs_name; rep_name] [ia; first];
          Identity.carry th n;
          ignore (Identity.watch_theorem th n) in
        write th1 1; write th2 0;
        Identity.finish_record ()) ()
    end else if !noting then (note_old th1; note_old th2);
    (th1, th2)

end;;

let REFL = Proofeval_kernel_log.refl;;
let TRANS = Proofeval_kernel_log.trans;;
let MK_COMB = Proofeval_kernel_log.mk_comb;;
let ABS = Proofeval_kernel_log.abs;;
let BETA = Proofeval_kernel_log.beta;;
let ASSUME = Proofeval_kernel_log.assume;;
let EQ_MP = Proofeval_kernel_log.eq_mp;;
let DEDUCT_ANTISYM_RULE = Proofeval_kernel_log.deduct;;
let INST = Proofeval_kernel_log.inst;;
let INST_TYPE = Proofeval_kernel_log.inst_type;;
let new_axiom = Proofeval_kernel_log.new_axiom;;
let new_type = Proofeval_kernel_log.new_type;;
let new_constant = Proofeval_kernel_log.new_constant;;
let new_basic_definition = Proofeval_kernel_log.new_basic_definition;;
let new_basic_type_definition = Proofeval_kernel_log.new_basic_type_definition;;
