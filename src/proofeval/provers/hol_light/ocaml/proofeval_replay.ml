(* The steps behind a theorem, written by an attempt's child as its kernel makes them
   (proofeval_kernel_log.ml), replayed through the kernel by a clean process as they
   arrive (HOL Light syntax, loaded after hol.ml).

   One record per line, each naming slots that earlier records filled; names in hex:
     Y n V name | Y n A name k ty1 .. tyk               types
     M n V name ty | M n C name ty | M n A f x | M n L v body   terms
     T n RULE args                                      theorems (rules as in fusion.ml)
     F n | G n                                          theorem n, term n, not used again
     END n
   A record fills slot n, which must be empty: never used (at most one above the
   highest used so far) or emptied by F or G. The writer runs in the child and is not
   trusted. The reader trusts nothing it reads: every type, term and theorem is rebuilt
   with the kernel's own constructors and rules, and a theorem from before the attempt
   is looked up in this process's serial table, never taken from the text. What a slot
   holds was made here, so whichever slot a record names, what it gets is the kernel's
   own: numbering games (freeing early, reusing a slot) can only make a replay fail. *)

module Proofeval_replay = struct
  module Log = Proofeval_kernel_log

  let hex = Log.hex

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

  (* What a slot holds. *)
  type made = Nothing | Ty of hol_type | Tm of term | Th of thm

  (* The input ended before its END record: the writer died, or stopped. *)
  exception Incomplete

  (* [next ()] is the next line, None at the end of the input. *)
  let replay_lines (next : unit -> string option) : thm =
    let made = ref (Array.make 4096 Nothing) and last = ref 0 in
    let tydefs = Hashtbl.create 1 and result = ref None in
    let fresh n v =
      let i = number n in
      if i > !last + 1 then failwith ("record " ^ n ^ " out of order")
      else if i <= !last && !made.(i) != Nothing then failwith ("record " ^ n ^ " twice")
      else begin
        if i >= Array.length !made then begin
          let bigger = Array.make (2 * i) Nothing in
          Array.blit !made 0 bigger 0 (Array.length !made);
          made := bigger
        end;
        !made.(i) <- v; if i > !last then last := i
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
      | ["G"; a] -> ignore (tm a); !made.(number a) <- Nothing
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
     replayed and what the live slots hold is kept. Incomplete when the input ends
     before END. Refused steps are read on to their end, so that the child, writing
     beside its proof, is not stopped (its verdict decides whether the refusal counts). *)
  let replay_from (ic : in_channel) : thm =
    (* The sibling allocates a line, its fields and their results per record, beside the
       context's whole heap (hundreds of MiB for s2n-bignum) that every major cycle marks:
       a larger minor heap and overhead make fewer cycles. *)
    Gc.set { (Gc.get ()) with Gc.minor_heap_size = 1 lsl 20; Gc.space_overhead = 200 };
    try replay_lines (fun () -> try Some (input_line ic) with End_of_file -> None)
    with
    | Incomplete -> raise Incomplete
    | e ->
      let buf = Bytes.create 65536 in
      let rec drain () = if input ic buf 0 65536 > 0 then drain () in
      (try drain () with _ -> ());
      raise e
end;;
