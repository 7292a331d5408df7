(* The steps behind a theorem, written by an attempt's child as its kernel makes them
   (proofeval_kernel_log.ml), replayed through the kernel by a clean process as they
   arrive (HOL Light syntax, loaded after hol.ml).

   A stream of records, each a kind byte, the slot it fills, then its fields: numbers
   as LEB128 (seven bits a byte, low first), names as their length then their bytes.
     Y n name | K n name k ty1 .. tyk                     types
     V n name ty | C n name ty | A n f x | L n v body      terms
     r n t (REFL) | t n a b (TRANS) | m n a b (MK_COMB) | a n v a (ABS) | b n t (BETA)
     s n t (ASSUME) | e n a b (EQ_MP) | d n a b (DEDUCT_ANTISYM_RULE)
     i n a k t1 v1 .. tk vk (INST) | j n a k ty1 tv1 .. (INST_TYPE)
     D n t (a definition) | P n tyname abs rep a first (a type definition)
     O n serial (a theorem from before the attempt) | X n (an axiom) | Z n (forged)
     W n th k    a side of theorem th: its conclusion (k = 0), an equation's left (1), right (2)
     T 0 name arity | N 0 name ty                          a new type, a new constant
     F n | G n                                             theorem n, term n, not used again
     E n                                                   the end: theorem n
   A record fills slot n, which must be empty: never used (at most one above the
   highest used so far) or emptied by F or G. The writer runs in the child and is not
   trusted. The reader trusts nothing it reads: every type, term and theorem is rebuilt
   with the kernel's own constructors and rules, and a theorem from before the attempt
   is looked up in this process's serial table, never taken from the stream. What a slot
   holds was made here, so whichever slot a record names, what it gets is the kernel's
   own: numbering games (freeing early, reusing a slot) can only make a replay fail.

   A term is made once while it lives here: a term record whose constructor and parts
   (the terms in its slots, or a name and a type slot) are those of a term made before,
   still alive, gets that very term. The child names one term by one slot only while
   the term stays in its caches; a term named again after it left them (a minor
   collection empties the cache of young terms) is written again. Two copies of a
   deeply shared term would then be compared by the kernel along every path, where the
   child compares one value with itself at once. *)

module Proofeval_replay = struct
  module Log = Proofeval_kernel_log

  (* The input ended before its E record: the writer died, or stopped. *)
  exception Incomplete

  (* The stream as it arrives: [fill buf] puts the next bytes in [buf] and says how
     many, 0 at the end. *)
  type input = { buf : Bytes.t; mutable pos : int; mutable len : int; fill : Bytes.t -> int }

  let input fill = { buf = Bytes.create 65536; pos = 0; len = 0; fill }

  let at_end inp =
    inp.pos >= inp.len && (inp.len <- inp.fill inp.buf; inp.pos <- 0; inp.len = 0)

  let byte inp =
    if at_end inp then raise Incomplete else
    let c = Bytes.unsafe_get inp.buf inp.pos in
    inp.pos <- inp.pos + 1; Char.code c

  (* At most 8 bytes: 56 bits, far above any slot or count. Read straight from the
     buffer when 8 bytes are there (nearly always), else a byte at a time. *)
  let rec num_from inp shift acc =
    if shift > 49 then failwith "a number too long" else
    let b = byte inp in
    let acc = acc lor ((b land 127) lsl shift) in
    if b < 128 then acc else num_from inp (shift + 7) acc

  let rec num_in inp buf p shift acc =
    let b = Char.code (Bytes.unsafe_get buf p) in
    let acc = acc lor ((b land 127) lsl shift) in
    if b < 128 then (inp.pos <- p + 1; acc)
    else if shift >= 49 then failwith "a number too long"
    else num_in inp buf (p + 1) (shift + 7) acc

  let num inp =
    if inp.pos + 8 <= inp.len then num_in inp inp.buf inp.pos 0 0 else num_from inp 0 0

  let longest_name = 1 lsl 24

  let name inp =
    let n = num inp in
    if n > longest_name then failwith "a name too long" else
    let s = Bytes.create n in
    let rec copy i =
      if i < n then begin
        if at_end inp then raise Incomplete;
        let k = min (n - i) (inp.len - inp.pos) in
        Bytes.blit inp.buf inp.pos s i k; inp.pos <- inp.pos + k; copy (i + k)
      end in
    copy 0; Bytes.unsafe_to_string s

  (* What a slot holds; a term with its id (see [shared]). *)
  type made = Nothing | Ty of hol_type | Tm of term * int | Th of thm

  (* The terms made here, found by their parts: a table by open addressing, at most
     half full, of entries of [width] ints: a term record's kind byte (0: no entry), its
     parts (the ids of its two terms; for a variable or constant, its type's slot, never
     freed, and its name's number), the term's place in a weak pool (which keeps no term
     alive) and its id, never given to another term. So parts named by id are the same
     values as long as the term found is alive: it holds them. A place is freed only
     with its entry. The pool grows a chunk at a time: a small replay fills a few pages
     of its first. *)
  let width = 5
  let least_entries = 256  (* a new table's, and a rebuilt one's at least *)
  let pool_bits = 12

  type sharing = {
    mutable table : int array;
    mutable entries : int;
    names : (string, int) Hashtbl.t;
    mutable pool : term Weak.t array;
    mutable places : int;  (* places used so far *)
    mutable freed : int list;
    mutable ids : int;
  }

  let sharing () =
    { table = Array.make (least_entries * width) 0; entries = 0; names = Hashtbl.create 256;
      pool = [||]; places = 0; freed = []; ids = 0 }

  let name_number sh s =
    match Hashtbl.find_opt sh.names s with
    | Some i -> i
    | None -> let i = Hashtbl.length sh.names + 1 in Hashtbl.add sh.names s i; i

  let pool_get sh i = Weak.get sh.pool.(i lsr pool_bits) (i land ((1 lsl pool_bits) - 1))
  let pool_set sh i t = Weak.set sh.pool.(i lsr pool_bits) (i land ((1 lsl pool_bits) - 1)) (Some t)

  let place sh =
    match sh.freed with
    | i :: rest -> sh.freed <- rest; i
    | [] ->
        let i = sh.places in
        if i lsr pool_bits >= Array.length sh.pool then
          sh.pool <- Array.append sh.pool [| Weak.create (1 lsl pool_bits) |];
        sh.places <- i + 1; i

  let rec probe table mask kind a b i =
    let e = i * width in
    let k = table.(e) in
    if k = 0 || (k = kind && table.(e + 1) = a && table.(e + 2) = b) then e
    else probe table mask kind a b ((i + 1) land mask)

  (* The entry of (kind, a, b), or the empty one where it would go. *)
  let find table kind a b =
    let h = kind + a * 0x9E3779B1 + b * 0x85EBCA77 in
    let mask = Array.length table / width - 1 in
    probe table mask kind a b ((h lxor (h lsr 16)) land mask)

  (* A table at most a quarter full of the entries whose terms are alive; the dead
     ones' places are freed. *)
  let rebuild sh =
    let old = sh.table in
    let live = ref 0 in
    for e = 0 to Array.length old / width - 1 do
      let j = e * width in
      if old.(j) <> 0 then
        if pool_get sh old.(j + 3) = None then (sh.freed <- old.(j + 3) :: sh.freed; old.(j) <- 0)
        else incr live
    done;
    let size = ref least_entries in
    while !size < 4 * !live do size := 2 * !size done;
    let table = Array.make (!size * width) 0 in
    for e = 0 to Array.length old / width - 1 do
      let j = e * width in
      if old.(j) <> 0 then Array.blit old j table (find table old.(j) old.(j + 1) old.(j + 2)) width
    done;
    sh.table <- table; sh.entries <- !live

  (* The live term made from (kind, a, b), or [make ()] (the kernel's constructor), with
     its id. *)
  let shared sh kind a b make =
    let e = find sh.table kind a b in
    let alive = if sh.table.(e) = 0 then None else pool_get sh sh.table.(e + 3) in
    match alive with
    | Some t -> (t, sh.table.(e + 4))
    | None ->
        let t = make () in
        let e =
          if sh.table.(e) <> 0 then e  (* its term is dead: the place is this one's now *)
          else begin
            if 2 * (sh.entries + 1) > Array.length sh.table / width then rebuild sh;
            let e = find sh.table kind a b in
            let table = sh.table in
            table.(e) <- kind; table.(e + 1) <- a; table.(e + 2) <- b; table.(e + 3) <- place sh;
            sh.entries <- sh.entries + 1; e
          end in
        pool_set sh sh.table.(e + 3) t;
        sh.ids <- sh.ids + 1;
        sh.table.(e + 4) <- sh.ids;
        (t, sh.ids)

  let replay_input (inp : input) : thm =
    let made = ref (Array.make 256 Nothing) and last = ref 0 in
    let tydefs = Hashtbl.create 1 and result = ref None in
    let fresh i v =
      if i < 1 || i > !last + 1 then failwith (Printf.sprintf "record %d out of order" i)
      else if i <= !last && !made.(i) != Nothing then failwith (Printf.sprintf "record %d twice" i)
      else begin
        if i >= Array.length !made then begin
          let bigger = Array.make (2 * i) Nothing in
          Array.blit !made 0 bigger 0 (Array.length !made);
          made := bigger
        end;
        !made.(i) <- v; if i > !last then last := i
      end in
    let get i = if i >= 1 && i <= !last then !made.(i) else Nothing in
    let typed () = let i = num inp in
      match get i with Ty y -> (y, i) | _ -> failwith (Printf.sprintf "no earlier type %d" i) in
    let ty () = fst (typed ()) in
    let term () = let i = num inp in
      match get i with Tm (t, id) -> (t, id) | _ -> failwith (Printf.sprintf "no earlier term %d" i) in
    let tm () = fst (term ()) in
    let th () = let i = num inp in
      match get i with Th t -> t | _ -> failwith (Printf.sprintf "no earlier theorem %d" i) in
    let two f = let a = f () in let b = f () in (a, b) in
    (* mk_mconst searches the list of all constants: once per name and type is enough *)
    let constants = Hashtbl.create 256 in
    let constant name y =
      try Hashtbl.find constants (name, y) with Not_found ->
        let c = mk_mconst (name, y) in Hashtbl.add constants (name, y) c; c in
    let tydef () =
      let tyname = name inp in let abs = name inp in let rep = name inp in
      let a = th () in let first = num inp in
      let key = (tyname, abs, rep, a) in
      let pair =
        try Hashtbl.find tydefs key with Not_found ->
          let p = Hol.new_basic_type_definition tyname (abs, rep) a in
          Hashtbl.add tydefs key p; p in
      if first = 1 then fst pair else if first = 0 then snd pair else failwith "bad TYDEF" in
    let theorem = function
      | 'O' -> (let s = num inp in
          try Hashtbl.find Log.olds s
          with Not_found -> failwith (Printf.sprintf "no theorem %d before the attempt" s))
      | 'r' -> Hol.REFL (tm ())
      | 't' -> let a, b = two th in Hol.TRANS a b
      | 'm' -> Hol.MK_COMB (two th)
      | 'a' -> let v = tm () in Hol.ABS v (th ())
      | 'b' -> Hol.BETA (tm ())
      | 's' -> Hol.ASSUME (tm ())
      | 'e' -> let a, b = two th in Hol.EQ_MP a b
      | 'd' -> let a, b = two th in Hol.DEDUCT_ANTISYM_RULE a b
      | 'i' -> let a = th () in let k = num inp in Hol.INST (List.init k (fun _ -> two tm)) a
      | 'j' -> let a = th () in let k = num inp in Hol.INST_TYPE (List.init k (fun _ -> two ty)) a
      | 'D' -> Hol.new_basic_definition (tm ())
      | 'P' -> tydef ()
      | 'X' -> failwith "the proof adds an axiom"
      | 'Z' -> failwith "a theorem that the kernel did not make"
      | c -> failwith (Printf.sprintf "unknown record %C" c) in
    let free i theorem =
      (match get i with
       | Th _ when theorem -> ()
       | Tm _ when not theorem -> ()
       | _ -> failwith (Printf.sprintf "no earlier %s %d" (if theorem then "theorem" else "term") i));
      !made.(i) <- Nothing in
    let sh = sharing () in
    let made_term n kind a b make = let t, id = shared sh (Char.code kind) a b make in fresh n (Tm (t, id)) in
    let declared n = if n <> 0 then failwith "a declaration fills no slot" in
    let record () =
      let kind = Char.chr (byte inp) in
      if !result != None then failwith "records after END" else
      let n = num inp in
      match kind with
      | 'Y' -> fresh n (Ty (mk_vartype (name inp)))
      | 'K' -> let s = name inp in let k = num inp in
          fresh n (Ty (mk_type (s, List.init k (fun _ -> ty ()))))
      | 'V' -> let s = name inp in let y, i = typed () in
          made_term n 'V' i (name_number sh s) (fun () -> mk_var (s, y))
      | 'C' -> let s = name inp in let y, i = typed () in
          made_term n 'C' i (name_number sh s) (fun () -> constant s y)
      | 'A' -> let (f, i), (x, j) = two term in made_term n 'A' i j (fun () -> mk_comb (f, x))
      | 'L' -> let (v, i), (b, j) = two term in made_term n 'L' i j (fun () -> mk_abs (v, b))
      | 'W' -> let c = concl (th ()) in
          let t = match num inp, c with
            | 0, _ -> c
            | 1, Comb (Comb (Const ("=", _), l), _) -> l
            | 2, Comb (Comb (Const ("=", _), _), r) -> r
            | _ -> failwith "no such side" in
          sh.ids <- sh.ids + 1; fresh n (Tm (t, sh.ids))
      | 'T' -> declared n; let s = name inp in Hol.new_type (s, num inp)
      | 'N' -> declared n; let s = name inp in Hol.new_constant (s, ty ())
      | 'F' -> free n true
      | 'G' -> free n false
      | 'E' -> (match get n with
          | Th t -> result := Some t
          | _ -> failwith (Printf.sprintf "no earlier theorem %d" n))
      | c -> fresh n (Th (theorem c)) in
    let rec records k =
      if not (at_end inp) then begin
        (try record () with Failure why | Invalid_argument why ->
           failwith (Printf.sprintf "record %d: %s" k why));
        records (k + 1)
      end in
    records 1;
    match !result with Some t -> t | None -> raise Incomplete

  (* Steps given whole (the tests write them by hand). *)
  let replay (steps : string) : thm =
    let given = ref false in
    let fill buf =
      if !given then 0 else begin
        given := true;
        if String.length steps > Bytes.length buf then failwith "steps too long to be given whole";
        Bytes.blit_string steps 0 buf 0 (String.length steps); String.length steps
      end in
    try replay_input (input fill) with Incomplete -> failwith "no END record"

  (* Steps read as they come, from the attempt's child: nothing but the records being
     replayed and what the live slots hold is kept. Incomplete when the input ends
     before END. Refused steps are read on to their end, so that the child, writing
     beside its proof, is not stopped (its verdict decides whether the refusal counts). *)
  let replay_from (ic : in_channel) : thm =
    (* The sibling allocates what each record makes, beside the context's whole heap
       (hundreds of MiB for s2n-bignum) that every major cycle marks: once the steps are
       long, a larger minor heap and overhead make fewer cycles. Not before (a new minor
       heap costs a small replay half its time), and not the minor heap on OCaml 5,
       which reserves address space for the young heap of every possible domain: there
       (Debian 13's OCaml 5.3, bytecode) the resized sibling died of SIGSEGV. *)
    let ocaml_5 = String.get Sys.ocaml_version 0 >= '5' in
    let young = if ocaml_5 then (Gc.get ()).Gc.minor_heap_size else 1 lsl 20 in
    let fills = ref 0 in
    let fill buf =
      incr fills;
      if !fills = 16 then
        Gc.set { (Gc.get ()) with Gc.minor_heap_size = young; Gc.space_overhead = 200 };
      Stdlib.input ic buf 0 (Bytes.length buf) in
    let inp = input fill in
    try replay_input inp with
    | Incomplete -> raise Incomplete
    | e ->
      let rec drain () = if not (at_end inp) then (inp.pos <- inp.len; drain ()) in
      (try drain () with _ -> ());
      raise e
end;;
