(* What the plugin needs from Coq that differs between versions: Coq 8.16 to 8.19. *)

open Vernacexpr

type state = Vernacstate.t

let freeze () = Vernacstate.freeze_interp_state ~marshallable:false
(* Vernacstate skips an unfreeze of the state it froze last, as if nothing had changed
   since: what ran in between outside Vernacinterp (a statement's tactics) would stay. *)
let restore (st : state) =
  Vernacstate.invalidate_cache ();
  Vernacstate.unfreeze_interp_state st
let proof_open (st : state) = Option.has_some st.Vernacstate.lemmas

(* Whether Qed would refuse the proof open in [st] for its given-up goals: Coq 8.16's own
   test (Proof.return), a finished proof whose evar map has given up any goal. *)
let gives_up (st : state) =
  match st.Vernacstate.lemmas with
  | None -> false
  | Some lemmas ->
      Vernacstate.LemmaStack.with_top lemmas ~f:(fun p ->
          let proof = Declare.Proof.get p in
          Proof.is_done proof && Evd.has_given_up (Proof.data proof).Proof.sigma)

(* A file read as Load reads it. *)
let parsable path ic =
  let loc = Loc.initial (Loc.InFile { dirpath = None; file = path }) in
  Pcoq.Parsable.make ~loc (Stream.of_channel ic)

(* The next command of [input], parsed in the proof mode of [st], as Load parses it. *)
let parse (st : state) input =
  let mode = if proof_open st then Some (Vernacinterp.get_default_proof_mode ()) else None in
  Flags.with_option Flags.we_are_parsing (Pcoq.Entry.parse (Pvernac.main_entry mode)) input

(* The state a Qed runs on: the one its statement left, with the finished proof. *)
let closing ~(started : state) (st : state) =
  { started with Vernacstate.lemmas = st.Vernacstate.lemmas; program = st.Vernacstate.program }

(* Run one parsed command; on an error Coq restores [st] and raises. *)
let run (st : state) command = Vernacinterp.interp ~st command

let view ({ CAst.v = { control; attrs; expr }; _ } : vernac_control) : Judge.command =
  if control <> [] then Judge.Escape "a control command (Fail, Succeed, Time, Timeout, Redirect)"
  else if attrs <> [] then Judge.Escape "an attribute"
  else
    match expr with
    | VernacStartTheoremProof (_, [ ((id, _), _) ]) -> Judge.Start id.CAst.v
    | VernacProof _ -> Judge.Proof
    | VernacExtend (("VernacSolve", _), _) -> Judge.Tactic
    | VernacBullet _ | VernacSubproof _ | VernacEndSubproof -> Judge.Structure
    | VernacEndProof (Proved (_, None)) -> Judge.Close
    | VernacEndProof Admitted -> Judge.Escape "Admitted"
    | VernacAbort | VernacAbortAll | VernacRestart | VernacUndo _ | VernacUndoTo _
    | VernacBack _ | VernacResetName _ | VernacResetInitial ->
        Judge.Escape "a command that abandons or rewinds a proof"
    | VernacAssumption _ | VernacContext _ | VernacPrimitive _ | VernacRegister _ ->
        Judge.Escape "an assumption or a primitive"
    | VernacRequire _ | VernacImport _ | VernacLoad _ | VernacDeclareMLModule _
    | VernacAddLoadPath _ | VernacRemoveLoadPath _ | VernacAddMLPath _ | VernacChdir _
    | VernacExtraDependency _ ->
        Judge.Escape "a command that loads or imports"
    | VernacSetOption _ | VernacAddOption _ | VernacRemoveOption _ | VernacSetOpacity _
    | VernacSetStrategy _ | VernacProofMode _ ->
        Judge.Escape "an option or a flag"
    | VernacDefineModule _ | VernacDeclareModule _ | VernacDeclareModuleType _ | VernacInclude _
    | VernacBeginSection _ | VernacEndSegment _ ->
        Judge.Escape "a module or a section"
    | VernacNotation _ | VernacReservedNotation _ | VernacSyntacticDefinition _
    | VernacDeclareCustomEntry _ | VernacNotationAddFormat _ ->
        Judge.Escape "a notation"
    | VernacStartTheoremProof _ -> Judge.Other "a mutual statement (with)"
    | VernacEndProof (Proved (_, Some _)) -> Judge.Other "Save with a name"
    | _ -> Judge.Other "this command"

(* The elaborated type of a statement [Theorem id binders : type], as Coq's own
   [Theorem] elaborates it. *)
let statement ({ CAst.v = { expr; _ }; _ } : vernac_control) =
  match expr with
  | VernacStartTheoremProof (_, [ ((id, _), (binders, typ)) ]) -> Some (id.CAst.v, binders, typ)
  | _ -> None
