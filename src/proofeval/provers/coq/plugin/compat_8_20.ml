(* What the plugin needs from Coq that differs between versions: Coq 8.20. *)

open Vernacexpr

type state = Vernacstate.t

let freeze () = Vernacstate.freeze_full_state ()
(* Vernacstate skips an unfreeze of the state it froze last, as if nothing had changed
   since: what ran in between outside Vernacinterp (a statement's tactics) would stay. *)
let restore (st : state) =
  Vernacstate.Interp.invalidate_cache ();
  Vernacstate.unfreeze_full_state st
let proof_open (st : state) = Option.has_some st.Vernacstate.interp.Vernacstate.Interp.lemmas

(* Whether Qed would refuse the proof open in [st] for its given-up goals: Coq 8.20's own
   test (Declare.prepare_proof), a finished proof whose term still holds a given-up goal. *)
let gives_up (st : state) =
  match st.Vernacstate.interp.Vernacstate.Interp.lemmas with
  | None -> false
  | Some lemmas ->
      Vernacstate.LemmaStack.with_top lemmas ~f:(fun p ->
          let proof = Declare.Proof.get p in
          let { Proof.sigma; entry; _ } = Proof.data proof in
          let given_up = Evd.given_up sigma in
          let exception Found in
          let rec walk c =
            (match EConstr.kind sigma c with
             | Constr.Evar (e, _) when Evar.Set.mem e given_up -> raise Found
             | _ -> ());
            EConstr.iter sigma walk c
          in
          let holds (_, body, _) = try walk body; false with Found -> true in
          Proof.is_done proof && Evd.has_given_up sigma
          && List.exists holds (Proofview.initial_goals entry))

(* A file read as Load reads it. *)
let parsable path ic =
  let loc = Loc.initial (Loc.InFile { dirpath = None; file = path }) in
  Pcoq.Parsable.make ~loc (Gramlib.Stream.of_channel ic)

(* The next command of [input], parsed in the proof mode of [st], as coqtop parses it. *)
let parse (st : state) input =
  let mode = if proof_open st then Some (Synterp.get_default_proof_mode ()) else None in
  Pcoq.Entry.parse (Pvernac.main_entry mode) input

(* The state a Qed runs on: the one its statement left, with the finished proof. *)
let closing ~(started : state) (st : state) =
  let now = st.Vernacstate.interp in
  let interp = { started.Vernacstate.interp with
                 Vernacstate.Interp.lemmas = now.Vernacstate.Interp.lemmas;
                 program = now.Vernacstate.Interp.program } in
  { started with Vernacstate.interp }

(* Run one parsed command; raises on an error (the caller restores the state). *)
let run (st : state) command = Vernacinterp.interp ~intern:Vernacinterp.fs_intern ~st command

let view_synterp = function
  | VernacExtend ({ ext_entry = "VernacSolve"; _ }, _) -> Judge.Tactic
  | VernacLoad _ | VernacRequire _ | VernacImport _ | VernacDeclareMLModule _ | VernacChdir _
  | VernacExtraDependency _ ->
      Judge.Escape "a command that loads or imports"
  | VernacSetOption _ | VernacProofMode _ -> Judge.Escape "an option or a flag"
  | VernacDefineModule _ | VernacDeclareModule _ | VernacDeclareModuleType _ | VernacInclude _
  | VernacBeginSection _ | VernacEndSegment _ ->
      Judge.Escape "a module or a section"
  | VernacNotation _ | VernacReservedNotation _ | VernacDeclareCustomEntry _ ->
      Judge.Escape "a notation"
  | VernacExtend _ -> Judge.Other "this command"

let view_pure = function
  | VernacStartTheoremProof (_, [ ((id, _), _) ]) -> Judge.Start id.CAst.v
  | VernacStartTheoremProof _ -> Judge.Other "a mutual statement (with)"
  | VernacProof _ -> Judge.Proof
  | VernacBullet _ | VernacSubproof _ | VernacEndSubproof -> Judge.Structure
  | VernacEndProof (Proved (_, None)) -> Judge.Close
  | VernacEndProof (Proved (_, Some _)) -> Judge.Other "Save with a name"
  | VernacEndProof Admitted -> Judge.Escape "Admitted"
  | VernacAbort | VernacAbortAll | VernacRestart | VernacUndo _ | VernacUndoTo _ | VernacBack _
  | VernacResetName _ | VernacResetInitial ->
      Judge.Escape "a command that abandons or rewinds a proof"
  | VernacAssumption _ | VernacContext _ | VernacPrimitive _ | VernacRegister _ | VernacSymbol _
  | VernacAddRewRule _ ->
      Judge.Escape "an assumption or a primitive"
  | VernacAddOption _ | VernacRemoveOption _ | VernacSetOpacity _ | VernacSetStrategy _ ->
      Judge.Escape "an option or a flag"
  | VernacSyntacticDefinition _ -> Judge.Escape "a notation"
  | _ -> Judge.Other "this command"

let view ({ CAst.v = { control; attrs; expr }; _ } : vernac_control) : Judge.command =
  if control <> [] then Judge.Escape "a control command (Fail, Succeed, Time, Timeout, Redirect)"
  else if attrs <> [] then Judge.Escape "an attribute"
  else match expr with VernacSynterp e -> view_synterp e | VernacSynPure e -> view_pure e

(* The parts of a statement [Theorem id binders : type]. *)
let statement ({ CAst.v = { expr; _ }; _ } : vernac_control) =
  match expr with
  | VernacSynPure (VernacStartTheoremProof (_, [ ((id, _), (binders, typ)) ])) ->
      Some (id.CAst.v, binders, typ)
  | _ -> None
