(* Kernel provenance, loaded right after fusion.ml (HOL Light syntax).

   Every theorem the kernel makes inside an attempt's child carries the inference that
   made it (see proofeval_identity.ml): a node holding the rule, its term arguments and
   the nodes of its premises. Before an attempt (the core and the context) a theorem is
   only noted in a weak array; the ones alive when an attempt is forked are numbered,
   and carry that number. The child sends the steps behind its final theorem to a clean
   sibling process, which replays them through the kernel (see proofeval_replay.ml): a
   value that only looks like a theorem carries no node, and a forged node does not
   replay. Nothing here is trusted to be intact in the child; the replay trusts only
   itself and the serial table of the process the attempt was forked from. *)

module Proofeval_kernel_log = struct
  module Identity = Proofeval_identity

  type step =
    | Old of int
    | Refl of term
    | Trans of node * node
    | Mk_comb of node * node
    | Abs of term * node
    | Beta of term
    | Assume of term
    | Eq_mp of node * node
    | Deduct of node * node
    | Inst of (term * term) list * node
    | Inst_type of (hol_type * hol_type) list * node
    | Definition of term
    | Type_definition of string * string * string * node * bool
    | Axiom of term
    | Not_from_kernel
  and node = Obj.t  (* an object-tagged block: see proofeval_identity.ml *)

  let step_of (n : node) : step = Identity.step n
  let id_of (n : node) = Identity.id n

  let recording = ref false
  let forged = Identity.node Not_from_kernel

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
     Each carries its number from then on. *)
  let refresh_olds () =
    if !changed then begin
      Gc.full_major ();
      Hashtbl.reset olds;
      List.iteri
        (fun i th ->
          Hashtbl.add olds (i + 1) th;
          Identity.carry th (Identity.node (Old (i + 1))))
        (live_in (!current :: !chunks));
      changed := false
    end

  let node_of (th : thm) : node =
    match Identity.carried th with Some n -> n | None -> forged

  (* Off in an attempt's child whose OK is not replayed (--replay off): nothing is noted. *)
  let noting = ref true

  (* In an attempt's child, before the attempt. *)
  let record_steps replay = if replay then recording := true else noting := false

  let note step th =
    if !recording then Identity.carry th (Identity.node (step ()))
    else if !noting then note_old th;
    th

  let refl tm = note (fun () -> Refl tm) (Hol.REFL tm)
  let trans a b = note (fun () -> Trans (node_of a, node_of b)) (Hol.TRANS a b)
  let mk_comb (a, b) = note (fun () -> Mk_comb (node_of a, node_of b)) (Hol.MK_COMB (a, b))
  let abs v th = note (fun () -> Abs (v, node_of th)) (Hol.ABS v th)
  let beta tm = note (fun () -> Beta tm) (Hol.BETA tm)
  let assume tm = note (fun () -> Assume tm) (Hol.ASSUME tm)
  let eq_mp a b = note (fun () -> Eq_mp (node_of a, node_of b)) (Hol.EQ_MP a b)
  let deduct a b = note (fun () -> Deduct (node_of a, node_of b)) (Hol.DEDUCT_ANTISYM_RULE a b)
  let inst theta th = note (fun () -> Inst (theta, node_of th)) (Hol.INST theta th)
  let inst_type theta th = note (fun () -> Inst_type (theta, node_of th)) (Hol.INST_TYPE theta th)
  let new_axiom tm = note (fun () -> Axiom tm) (Hol.new_axiom tm)
  let new_basic_definition tm = note (fun () -> Definition tm) (Hol.new_basic_definition tm)

  let new_basic_type_definition ty (abs_name, rep_name) th =
    let a, b = Hol.new_basic_type_definition ty (abs_name, rep_name) th in
    let step first () = Type_definition (ty, abs_name, rep_name, node_of th, first) in
    (note (step true) a, note (step false) b)

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
let new_basic_definition = Proofeval_kernel_log.new_basic_definition;;
let new_basic_type_definition = Proofeval_kernel_log.new_basic_type_definition;;
