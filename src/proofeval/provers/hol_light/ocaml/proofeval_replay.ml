(* The steps behind a theorem, written by an attempt's child and replayed through the
   kernel by a clean process (HOL Light syntax, loaded after hol.ml).

   One record per line, each naming earlier records by number; names in hex:
     Y n V name | Y n A name k ty1 .. tyk               types
     M n V name ty | M n C name ty | M n A f x | M n L v body   terms
     T n RULE args                                      theorems (rules as in fusion.ml)
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
    match n.Log.step with
    | Log.Trans (a, b) | Log.Mk_comb (a, b) | Log.Eq_mp (a, b) | Log.Deduct (a, b) -> [a; b]
    | Log.Abs (_, a) | Log.Inst (_, a) | Log.Inst_type (_, a) | Log.Type_definition (_, _, _, a, _) -> [a]
    | _ -> []

  let key (n : Log.node) = match n.Log.step with Log.Old s -> -s | _ -> n.Log.id

  (* One record: words separated by spaces. (Printf is several times slower here.) *)
  let put out words =
    List.iteri (fun i w -> if i > 0 then Buffer.add_char out ' '; Buffer.add_string out w) words;
    Buffer.add_char out '\n'

  let num = string_of_int

  (* Every term already made is moved to the major heap, where the collector does not
     move values unless it compacts, which is off while the steps are written. *)
  let with_values_in_place f =
    Gc.minor ();
    let gc = Gc.get () in
    Gc.set { gc with Gc.max_overhead = 1000000 };
    Fun.protect ~finally:(fun () -> Gc.set gc) f

  let write (out : Buffer.t) (th : thm) = with_values_in_place @@ fun () ->
    let next = ref 0 in
    let fresh () = incr next; !next in
    let tys = Types.create 256 and done_ = Hashtbl.create 4096 in
    let same = Same_term.create 65536 and shapes = Hashtbl.create 65536 in
    let record kind words = let i = fresh () in put out (kind :: num i :: words); i in
    let rec ty t =
      try Types.find tys t with Not_found ->
        let i =
          if is_vartype t then record "Y" ["V"; hex (dest_vartype t)]
          else
            let name, args = dest_type t in
            let ids = List.map (fun a -> num (ty a)) args in
            record "Y" ("A" :: hex name :: num (List.length ids) :: ids) in
        Types.add tys t i; i in
    let rec tm t =
      try Same_term.find same t with Not_found ->
        let shape, words =
          if is_var t then
            let n, y = dest_var t in let yi = ty y in (0, n, yi, 0), fun () -> ["V"; hex n; num yi]
          else if is_const t then
            let n, y = dest_const t in let yi = ty y in (1, n, yi, 0), fun () -> ["C"; hex n; num yi]
          else if is_comb t then
            let f, x = dest_comb t in
            let fi = tm f in let xi = tm x in (2, "", fi, xi), fun () -> ["A"; num fi; num xi]
          else
            let v, b = dest_abs t in
            let vi = tm v in let bi = tm b in (3, "", vi, bi), fun () -> ["L"; num vi; num bi] in
        let i =
          try Hashtbl.find shapes shape with Not_found ->
            let i = record "M" (words ()) in Hashtbl.add shapes shape i; i in
        Same_term.add same t i; i in
    let id (n : Log.node) = num (Hashtbl.find done_ (key n)) in
    let pairs f theta =
      num (List.length theta)
      :: List.concat_map (fun (a, b) -> let x = f a in let y = f b in [num x; num y]) theta in
    let emit (n : Log.node) =
      let words =
        match n.Log.step with
        | Log.Old s -> ["OLD"; num s]
        | Log.Refl t -> ["REFL"; num (tm t)]
        | Log.Trans (a, b) -> ["TRANS"; id a; id b]
        | Log.Mk_comb (a, b) -> ["MK_COMB"; id a; id b]
        | Log.Abs (v, a) -> let vi = tm v in ["ABS"; num vi; id a]
        | Log.Beta t -> ["BETA"; num (tm t)]
        | Log.Assume t -> ["ASSUME"; num (tm t)]
        | Log.Eq_mp (a, b) -> ["EQ_MP"; id a; id b]
        | Log.Deduct (a, b) -> ["DEDUCT"; id a; id b]
        | Log.Inst (theta, a) -> let p = pairs tm theta in "INST" :: id a :: p
        | Log.Inst_type (theta, a) -> let p = pairs ty theta in "INST_TYPE" :: id a :: p
        | Log.Definition t -> ["DEF"; num (tm t)]
        | Log.Type_definition (name, abs, rep, a, first) ->
            ["TYDEF"; hex name; hex abs; hex rep; id a; if first then "1" else "0"]
        | Log.Axiom _ -> ["AXIOM"]
        | Log.Not_from_kernel -> ["FORGED"] in
      Hashtbl.replace done_ (key n) (record "T" words) in
    (* In the order the kernel made them, which is also the order in which the
       constants and types the terms name were defined. Without recursion: derivations
       can be millions of steps deep. *)
    let seen = Hashtbl.create 4096 in
    let rec reach acc = function
      | [] -> acc
      | n :: rest ->
          if Hashtbl.mem seen (key n) then reach acc rest
          else (Hashtbl.add seen (key n) (); reach (n :: acc) (premises n @ rest)) in
    let root = Log.node_of th in
    let order (a : Log.node) (b : Log.node) =
      let c = compare (a.Log.id : int) b.Log.id in
      if c <> 0 then c else compare (key a : int) (key b) in
    List.iter emit (List.sort order (reach [] [root]));
    put out ["END"; id root]

  (* ---- replaying, in a clean process ---- *)

  let unhex s =
    let n = String.length s in
    if n mod 2 <> 0 then failwith "odd hex" else
    String.init (n / 2) (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

  let number s =
    match int_of_string_opt s with
    | Some n when n > 0 && string_of_int n = s -> n
    | _ -> failwith ("not a record number: " ^ s)

  let count s =
    match int_of_string_opt s with
    | Some n when n >= 0 && string_of_int n = s -> n
    | _ -> failwith ("not a count: " ^ s)

  let get table what s =
    try Hashtbl.find table (number s) with Not_found -> failwith ("no earlier " ^ what ^ " " ^ s)

  let rec pairs_of f g = function
    | [] -> []
    | a :: b :: rest -> (f a, g b) :: pairs_of f g rest
    | _ -> failwith "odd instantiation"

  let replay (text : string) : thm =
    let n = String.length text in
    let body = if n > 0 && text.[n - 1] = '\n' then String.sub text 0 (n - 1) else text in
    let tys = Hashtbl.create 256 and tms = Hashtbl.create 4096 and ths = Hashtbl.create 4096 in
    let tydefs = Hashtbl.create 1 and result = ref None in
    let fresh table n v =
      let i = number n in
      if Hashtbl.mem table i then failwith ("record " ^ n ^ " twice") else Hashtbl.add table i v in
    let ty = get tys "type" and tm = get tms "term" and th = get ths "theorem" in
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
      | ["Y"; n; "V"; name] -> fresh tys n (mk_vartype (unhex name))
      | "Y" :: n :: "A" :: name :: k :: args when List.length args = count k ->
          fresh tys n (mk_type (unhex name, List.map ty args))
      | ["M"; n; "V"; name; y] -> fresh tms n (mk_var (unhex name, ty y))
      | ["M"; n; "C"; name; y] -> fresh tms n (constant name y)
      | ["M"; n; "A"; f; x] -> fresh tms n (mk_comb (tm f, tm x))
      | ["M"; n; "L"; v; b] -> fresh tms n (mk_abs (tm v, tm b))
      | "T" :: n :: r -> fresh ths n (rule r)
      | ["END"; a] -> result := Some (th a)
      | _ -> failwith "malformed record" in
    List.iteri
      (fun i line ->
        try record line with Failure why | Invalid_argument why ->
          failwith (Printf.sprintf "record %d: %s" (i + 1) why))
      (String.split_on_char '\n' body);
    match !result with Some t -> t | None -> failwith "no END record"
end;;
