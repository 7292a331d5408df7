(* The steps behind a theorem, written by an attempt's child and replayed through the
   kernel by a clean process (HOL Light syntax, loaded after hol.ml).

   One record per line, each naming earlier records by number; names in hex:
     Y n V name | Y n A name k ty1 .. tyk               types
     M n V name ty | M n C name ty | M n A f x | M n L v body   terms
     T n RULE args                                      theorems (rules as in fusion.ml)
     F th                                               theorem th is not used again
     END th
   The writer runs in the child and is not trusted. The reader trusts nothing it reads:
   every type, term and theorem is rebuilt with the kernel's own constructors and
   rules, and a theorem from before the attempt is looked up in this process's serial
   table, never taken from the text. *)

module Proofeval_replay = struct
  module Log = Proofeval_kernel_log

  let hex_digits = "0123456789abcdef"

  let hex s =
    String.init (2 * String.length s) (fun i ->
      let c = Char.code s.[i / 2] in
      hex_digits.[if i mod 2 = 0 then c lsr 4 else c land 15])

  (* ---- writing, in the attempt's child ---- *)

  (* Equal types are written once, found by structure (types are small). *)
  module Types = Hashtbl.Make (struct
    type t = hol_type
    let equal a b = a == b || a = b
    let hash = Hashtbl.hash_param 40 200
  end)

  (* Equal terms are written once too, but terms can be large: comparing and hashing
     them whole made writing the steps the largest cost of the replay. A term is found
     by identity, hashed by its address (see [write] for why it does not move); one met
     for the first time is numbered by its shape, its parts' numbers, so equal terms
     that are distinct values still share one record. *)
  module Same_term = Hashtbl.Make (struct
    type t = term
    let equal = ( == )
    (* an address read as an int is not a valid int until shifted (which tags it) *)
    let hash (t : term) = (Obj.magic t : int) lsr 4
  end)

  let premises (n : Log.node) =
    match Log.step_of n with
    | Log.Trans (a, b) | Log.Mk_comb (a, b) | Log.Eq_mp (a, b) | Log.Deduct (a, b) -> [a; b]
    | Log.Abs (_, a) | Log.Inst (_, a) | Log.Inst_type (_, a) | Log.Type_definition (_, _, _, a, _) -> [a]
    | _ -> []

  (* A number, in decimal, without allocating. *)
  let rec add_int out n =
    if n >= 10 then add_int out (n / 10);
    Buffer.add_char out (Char.unsafe_chr (48 + n mod 10))

  (* One record: its kind, its number, then words and numbers separated by spaces. *)
  let put out kind i words ints =
    Buffer.add_string out kind; Buffer.add_char out ' '; add_int out i;
    List.iter (fun w -> Buffer.add_char out ' '; Buffer.add_string out w) words;
    List.iter (fun n -> Buffer.add_char out ' '; add_int out n) ints;
    Buffer.add_char out '\n'

  (* Every term already made is moved to the major heap, where the collector does not
     move values unless it compacts, which is off while the steps are written. *)
  let with_values_in_place f =
    Gc.minor ();
    let gc = Gc.get () in
    Gc.set { gc with Gc.max_overhead = 1000000 };
    Fun.protect ~finally:(fun () -> Gc.set gc) f

  (* The nodes behind [root], premises first: a node's number is larger than its
     premises' (it is made after them), so sorting by number is also the order in which
     the constants and types the terms name were defined. A node is marked once found
     (-1), so a shared derivation is walked once; without recursion: derivations can be
     millions of steps deep. *)
  let reachable root =
    let found = ref [] and count = ref 0 in
    let visit n =
      if Log.Identity.mark n = 0 then begin
        Log.Identity.set_mark n (-1); found := n :: !found; incr count; true end
      else false in
    let rec walk = function
      | [] -> ()
      | n :: rest -> walk (List.fold_left (fun acc p -> if visit p then p :: acc else acc) rest (premises n)) in
    if visit root then walk [root];
    let nodes = Array.of_list !found in
    Array.sort (fun a b -> compare (Log.id_of a : int) (Log.id_of b)) nodes;
    nodes

  (* The records go to [oc] (a pipe to the replaying sibling) as they are made, through
     a buffer of bounded size: the child never holds the steps as a whole. *)
  let flush_at = 1 lsl 20

  (* A node's position in [nodes] (sorted), in its mark while the steps are written. *)
  let position n = -2 - Log.Identity.mark n

  (* For each node of [nodes], the position of the last node that uses it as a premise:
     after that one the replay can drop it ("F n" records), so it holds only the theorems
     still needed. The root is no node's premise (-1). *)
  let last_uses (nodes : Log.node array) =
    Array.iteri (fun k n -> Log.Identity.set_mark n (-2 - k)) nodes;
    let last = Array.make (Array.length nodes) (-1) in
    Array.iteri (fun k n -> List.iter (fun p -> last.(position p) <- k) (premises n)) nodes;
    last

  let write (oc : out_channel) (th : thm) = with_values_in_place @@ fun () ->
    let out = Buffer.create (2 * flush_at) in
    let put out kind i words ints =
      put out kind i words ints;
      if Buffer.length out >= flush_at then (Buffer.output_buffer oc out; Buffer.clear out) in
    let next = ref 0 in
    let fresh () = incr next; !next in
    let tys = Types.create 256 in
    let same = Same_term.create 65536 and shapes = Hashtbl.create 65536 in
    let record kind words ints = let i = fresh () in put out kind i words ints; i in
    let rec ty t =
      try Types.find tys t with Not_found ->
        let i =
          if is_vartype t then record "Y" ["V"; hex (dest_vartype t)] []
          else
            let name, args = dest_type t in
            let ids = List.map ty args in
            record "Y" ["A"; hex name] (List.length ids :: ids) in
        Types.add tys t i; i in
    let rec tm t =
      try Same_term.find same t with Not_found ->
        let shape, write_it =
          if is_var t then
            let n, y = dest_var t in let yi = ty y in
            (0, n, yi, 0), fun () -> record "M" ["V"; hex n] [yi]
          else if is_const t then
            let n, y = dest_const t in let yi = ty y in
            (1, n, yi, 0), fun () -> record "M" ["C"; hex n] [yi]
          else if is_comb t then
            let f, x = dest_comb t in
            let fi = tm f in let xi = tm x in (2, "", fi, xi), fun () -> record "M" ["A"] [fi; xi]
          else
            let v, b = dest_abs t in
            let vi = tm v in let bi = tm b in (3, "", vi, bi), fun () -> record "M" ["L"] [vi; bi] in
        let i =
          try Hashtbl.find shapes shape with Not_found ->
            let i = write_it () in Hashtbl.add shapes shape i; i in
        Same_term.add same t i; i in
    let nodes = reachable (Log.node_of th) in
    let recno = Array.make (Array.length nodes) 0 in
    let id n = recno.(position n) in
    let pairs f theta =
      List.length theta :: List.concat_map (fun (a, b) -> let x = f a in let y = f b in [x; y]) theta in
    let rule name ints = record "T" [name] ints in
    let emit (n : Log.node) =
        match Log.step_of n with
        | Log.Old s -> rule "OLD" [s]
        | Log.Refl t -> let ti = tm t in rule "REFL" [ti]
        | Log.Trans (a, b) -> rule "TRANS" [id a; id b]
        | Log.Mk_comb (a, b) -> rule "MK_COMB" [id a; id b]
        | Log.Abs (v, a) -> let vi = tm v in rule "ABS" [vi; id a]
        | Log.Beta t -> let ti = tm t in rule "BETA" [ti]
        | Log.Assume t -> let ti = tm t in rule "ASSUME" [ti]
        | Log.Eq_mp (a, b) -> rule "EQ_MP" [id a; id b]
        | Log.Deduct (a, b) -> rule "DEDUCT" [id a; id b]
        | Log.Inst (theta, a) -> let p = pairs tm theta in rule "INST" (id a :: p)
        | Log.Inst_type (theta, a) -> let p = pairs ty theta in rule "INST_TYPE" (id a :: p)
        | Log.Definition t -> let ti = tm t in rule "DEF" [ti]
        | Log.Type_definition (name, abs, rep, a, first) ->
            record "T" ["TYDEF"; hex name; hex abs; hex rep] [id a; if first then 1 else 0]
        | Log.Axiom _ -> rule "AXIOM" []
        | Log.Not_from_kernel -> rule "FORGED" [] in
    Fun.protect ~finally:(fun () -> Array.iter (fun n -> Log.Identity.set_mark n 0) nodes)
      (fun () ->
        let last = last_uses nodes in
        let free k p =
          let j = position p in
          if last.(j) = k then (last.(j) <- -1; put out "F" recno.(j) [] []) in
        Array.iteri (fun k n -> recno.(k) <- emit n; List.iter (free k) (premises n)) nodes;
        let root = Log.node_of th in
        put out "END" (id root) [] [];
        Buffer.output_buffer oc out;
        flush oc)

  (* ---- replaying, in a clean process ---- *)

  let unhex s =
    let n = String.length s in
    if n mod 2 <> 0 then failwith "odd hex" else
    String.init (n / 2) (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

  (* A decimal number as the writer writes it: digits, no sign, no leading zero. *)
  let natural s =
    let n = String.length s in
    if n = 0 || n > 18 || (n > 1 && s.[0] = '0') then None else
    let rec go i acc =
      if i = n then Some acc
      else match s.[i] with
        | '0' .. '9' as c -> go (i + 1) (10 * acc + Char.code c - 48)
        | _ -> None in
    go 0 0

  let number s =
    match natural s with
    | Some n when n > 0 -> n
    | _ -> failwith ("not a record number: " ^ s)

  let count s =
    match natural s with Some n -> n | None -> failwith ("not a count: " ^ s)

  let rec pairs_of f g = function
    | [] -> []
    | a :: b :: rest -> (f a, g b) :: pairs_of f g rest
    | _ -> failwith "odd instantiation"

  (* What a record made, by its number: records are numbered 1, 2, 3... in order. *)
  type made = Nothing | Ty of hol_type | Tm of term | Th of thm

  (* The input ended before its END record: the writer died, or stopped. *)
  exception Incomplete

  (* [next ()] is the next line, None at the end of the input. *)
  let replay_lines (next : unit -> string option) : thm =
    let made = ref (Array.make 4096 Nothing) and last = ref 0 in
    let tydefs = Hashtbl.create 1 and result = ref None in
    let fresh n v =
      let i = number n in
      if i <= !last then failwith ("record " ^ n ^ " twice")
      else if i <> !last + 1 then failwith ("record " ^ n ^ " out of order")
      else begin
        if i >= Array.length !made then begin
          let bigger = Array.make (2 * i) Nothing in
          Array.blit !made 0 bigger 0 (Array.length !made);
          made := bigger
        end;
        !made.(i) <- v; last := i
      end in
    let get s = let i = number s in if i <= !last then !made.(i) else Nothing in
    let ty s = match get s with Ty y -> y | _ -> failwith ("no earlier type " ^ s) in
    let tm s = match get s with Tm t -> t | _ -> failwith ("no earlier term " ^ s) in
    let th s = match get s with Th t -> t | _ -> failwith ("no earlier theorem " ^ s) in
    (* mk_mconst searches the list of all constants: once per name and type is enough *)
    let constants = Hashtbl.create 256 in
    let constant name y =
      try Hashtbl.find constants (name, y) with Not_found ->
        let c = mk_mconst (unhex name, ty y) in Hashtbl.add constants (name, y) c; c in
    let rule = function
      | ["OLD"; s] -> (
          try Hashtbl.find Log.olds (number s)
          with Not_found -> failwith ("no theorem " ^ s ^ " before the attempt"))
      | ["REFL"; t] -> Hol.REFL (tm t)
      | ["TRANS"; a; b] -> Hol.TRANS (th a) (th b)
      | ["MK_COMB"; a; b] -> Hol.MK_COMB (th a, th b)
      | ["ABS"; v; a] -> Hol.ABS (tm v) (th a)
      | ["BETA"; t] -> Hol.BETA (tm t)
      | ["ASSUME"; t] -> Hol.ASSUME (tm t)
      | ["EQ_MP"; a; b] -> Hol.EQ_MP (th a) (th b)
      | ["DEDUCT"; a; b] -> Hol.DEDUCT_ANTISYM_RULE (th a) (th b)
      | "INST" :: a :: k :: rest when List.length rest = 2 * count k ->
          Hol.INST (pairs_of tm tm rest) (th a)
      | "INST_TYPE" :: a :: k :: rest when List.length rest = 2 * count k ->
          Hol.INST_TYPE (pairs_of ty ty rest) (th a)
      | ["DEF"; t] -> Hol.new_basic_definition (tm t)
      | ["TYDEF"; name; abs; rep; a; first] ->
          let key = (name, abs, rep, a) in
          let pair =
            try Hashtbl.find tydefs key with Not_found ->
              let p = Hol.new_basic_type_definition (unhex name) (unhex abs, unhex rep) (th a) in
              Hashtbl.add tydefs key p; p in
          if first = "1" then fst pair else if first = "0" then snd pair else failwith "bad TYDEF"
      | ["AXIOM"] -> failwith "the proof adds an axiom"
      | ["FORGED"] -> failwith "a theorem that the kernel did not make"
      | r :: _ -> failwith ("malformed " ^ r ^ " record")
      | [] -> failwith "empty record" in
    let record line =
      if !result != None then failwith "records after END" else
      match String.split_on_char ' ' line with
      | ["Y"; n; "V"; name] -> fresh n (Ty (mk_vartype (unhex name)))
      | "Y" :: n :: "A" :: name :: k :: args when List.length args = count k ->
          fresh n (Ty (mk_type (unhex name, List.map ty args)))
      | ["M"; n; "V"; name; y] -> fresh n (Tm (mk_var (unhex name, ty y)))
      | ["M"; n; "C"; name; y] -> fresh n (Tm (constant name y))
      | ["M"; n; "A"; f; x] -> fresh n (Tm (mk_comb (tm f, tm x)))
      | ["M"; n; "L"; v; b] -> fresh n (Tm (mk_abs (tm v, tm b)))
      | "T" :: n :: r -> fresh n (Th (rule r))
      | ["F"; a] -> ignore (th a); !made.(number a) <- Nothing
      | ["END"; a] -> result := Some (th a)
      | _ -> failwith "malformed record" in
    let rec lines k =
      match next () with
      | None -> ()
      | Some line ->
          (try record line with Failure why | Invalid_argument why ->
             failwith (Printf.sprintf "record %d: %s" k why));
          lines (k + 1) in
    lines 1;
    match !result with Some t -> t | None -> raise Incomplete

  (* Steps given whole, as text (the tests write them by hand). *)
  let replay (text : string) : thm =
    let n = String.length text and start = ref 0 in
    let next () =
      if !start >= n then None
      else
        let stop = match String.index_from_opt text !start '\n' with Some i -> i | None -> n in
        let line = String.sub text !start (stop - !start) in
        start := stop + 1; Some line in
    try replay_lines next with Incomplete -> failwith "no END record"

  (* Steps read as they come, from the attempt's child: nothing but the records being
     replayed and what they made is held. Incomplete when the input ends before END. *)
  let replay_from (ic : in_channel) : thm =
    replay_lines (fun () -> try Some (input_line ic) with End_of_file -> None)
end;;
