(* Theorems that carry their inference, for the kernel log (proofeval_kernel_log.ml).

   A HOL Light theorem is a block [Sequent] holding a pair (hypotheses, conclusion).
   The log widens that pair to a triple whose third field is the node of the inference
   that made the theorem. The kernel reads only the first two fields, so it runs
   unchanged; the garbage collector, not a table keyed by theorem content, decides
   which nodes are kept (they live exactly as long as a theorem that needs them).

   A node is a block tagged as an object: OCaml's polymorphic equality, ordering and
   hashing read only an object's second field, a number unique to the node, so
   comparing two theorems never walks their derivations (equality does not stop at
   physically equal values: on a shared derivation it would take exponential time).

   Nothing here trusts a value to have the shape it should: a value that only looks
   like a theorem (made with Obj.magic, or rewritten in place) has no node.
   Compiled, because HOL Light's syntax is not OCaml's (its lexer reads the
   all-capitals names of Obj's functions as value names). *)

let next_id = ref 0

(* [ _; id; step; mark ]: the mark is the writer's (proofeval_replay.ml), in the child. *)
let node (step : 'step) : Obj.t =
  incr next_id;
  let n = Obj.new_block Obj.object_tag 4 in
  Obj.set_field n 1 (Obj.repr !next_id);
  Obj.set_field n 2 (Obj.repr step);
  n

let id (n : Obj.t) : int = Obj.obj (Obj.field n 1)

let step (n : Obj.t) : 'step = Obj.obj (Obj.field n 2)

let mark (n : Obj.t) : int = Obj.obj (Obj.field n 3)

let set_mark (n : Obj.t) (m : int) = Obj.set_field n 3 (Obj.repr m)

let is_node n =
  Obj.is_block n && Obj.tag n = Obj.object_tag && Obj.size n = 4
  && Obj.is_int (Obj.field n 1) && Obj.is_int (Obj.field n 3)

let is_sequent th =
  Obj.is_block th && Obj.tag th = 0 && Obj.size th = 1
  && (let p = Obj.field th 0 in
      Obj.is_block p && Obj.tag p = 0 && (Obj.size p = 2 || Obj.size p = 3))

(* The node a theorem carries, if it has the shape of a theorem that carries one. *)
let carried (th : 'thm) : Obj.t option =
  let th = Obj.repr th in
  if is_sequent th && Obj.size (Obj.field th 0) = 3 then
    let n = Obj.field (Obj.field th 0) 2 in
    if is_node n then Some n else None
  else None

(* [th] (a theorem the kernel just made, or one numbered before an attempt) made to
   carry [n]. *)
let carry (th : 'thm) (n : Obj.t) : unit =
  let th = Obj.repr th in
  if is_sequent th then
    let p = Obj.field th 0 in
    Obj.set_field th 0 (Obj.repr (Obj.field p 0, Obj.field p 1, n))
