(* The compiler's hint for an unbound value ("Hint: Did you mean MULT_CLAUSES?"), made
   from fewer names. Misc.spellcheck sorts every value name in scope and computes an edit
   distance to each: interpreted, some 40 ms over a HOL Light context's names, ten times a
   small attempt. It suggests only names within its cutoff, at most [most_edits] edits
   (insertions, deletions, substitutions, swaps of neighbours), so a name whose length
   differs by more, or whose letters differ from the unbound name's by more than twice
   as many (an edit changes at most two letters' counts), can never be suggested: it is
   left out before Misc.spellcheck sees the others, which then gives the same hint. *)

let most_edits = 3

(* Whether [other] can be within [most_edits] edits of [name]. *)
let near name =
  let n = String.length name in
  let counts = Array.make 256 0 in
  String.iter (fun c -> counts.(Char.code c) <- counts.(Char.code c) + 1) name;
  let left = Array.copy counts in
  fun other ->
    let m = String.length other in
    abs (n - m) <= most_edits
    &&
    let shared = ref 0 in
    String.iter
      (fun c ->
        let k = Char.code c in
        if left.(k) > 0 then (left.(k) <- left.(k) - 1; incr shared))
      other;
    String.iter (fun c -> let k = Char.code c in left.(k) <- counts.(k)) other;
    n + m - (2 * !shared) <= 2 * most_edits

let choices env name () =
  let near = near name in
  Misc.spellcheck (Env.fold_values (fun v _ _ acc -> if near v then v :: acc else acc) None env []) name

(* Reported before Env's own report (the last registered is tried first); a name under a
   module path, or a hint about a recursive definition, is left to Env. *)
let register () =
  Location.register_error_of_exn (function
    | Env.Error (Env.Lookup_error (loc, env, (Env.Unbound_value (Longident.Lident name, Env.No_hint) as error)))
      when loc <> Location.none ->
        Proofeval_ocaml.unbound_value_error loc error (choices env name)
    | _ -> None)
