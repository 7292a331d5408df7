(* The answer's allow-list, decided on Coq's own parse of each command (the version's
   compat module turns a parsed command into a [command]) before Coq runs it. An answer
   is auxiliary lemmas and the main proof: statements, [Proof], tactics, bullets and
   braces, [Qed] or [Defined]; nothing else runs. *)

type command =
  | Start of Names.Id.t  (* Theorem, Lemma, ...: one statement, no [with] *)
  | Proof  (* Proof, Proof using, Proof with *)
  | Tactic  (* an Ltac sentence, with its goal selector *)
  | Structure  (* a bullet or a brace *)
  | Close  (* Qed or Defined *)
  | Escape of string  (* escapes proving or changes the environment: CHEATING *)
  | Other of string  (* not a proof sentence: ERROR *)

type refusal = { cheating : bool; why : string }

(* [fresh]: the previous command started the proof in progress (only then may [Proof]
   come). *)
let judge ~in_proof ~fresh command =
  let refuse cheating why = Some { cheating; why } in
  match in_proof, command with
  | false, Start _ | true, (Tactic | Structure | Close) -> None
  | true, Proof when fresh -> None
  | true, Proof -> refuse false "Proof is allowed only right after the statement"
  | true, Start _ -> refuse true "states a theorem inside a proof"
  | false, (Proof | Tactic | Structure | Close) -> refuse false "a proof sentence outside a proof"
  | _, Escape what -> refuse true (what ^ " is not allowed in an answer")
  | _, Other what -> refuse false (what ^ " is not a proof sentence")
