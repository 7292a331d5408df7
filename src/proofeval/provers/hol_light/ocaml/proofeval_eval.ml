(* Answers evaluated without compiling them (native path only). Most small answers are
   HOL Light's own values applied to each other: `INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]`.
   Compiling one costs some 15 ms (ocamlopt's passes, `as` twice, ld, dlopen) where the
   proof takes one. The warm parser sends such an answer's tree instead of a plugin (see
   proofeval_tree.ml: names of the core's values, strings, lists, pairs, applications,
   after the same parse and deny-check); here it is type-checked against the types of
   those values, each known by a witness the compiler checked when it built the table
   (proofeval_values.ml, generated from the core's interface), and evaluated in the
   attempt's child as ocamlopt's code would be: arguments right to left, then the
   application. Nothing here is unsafe: a tree that does not type-check is compiled as
   before, which also says what is wrong with it. *)
open Proofeval_hol_core

type _ ty =
  | Tactic : tactic ty
  | Thm : thm ty
  | Term : term ty
  | Type : hol_type ty
  | String : string ty
  | List : 'a ty -> 'a list ty
  | Pair : 'a ty * 'b ty -> ('a * 'b) ty
  | Arrow : 'a ty * 'b ty -> ('a -> 'b) ty

type value = Value : 'a ty * 'a -> value

let table : (string, value) Hashtbl.t = Hashtbl.create 8192
let register = List.iter (fun (name, v) -> Hashtbl.replace table name v)

type tree =
  | Name of string
  | Text of string
  | Items of tree list
  | Tuple of tree * tree
  | Apply of tree * tree list

exception Unsupported

(* The tree in the fields proofeval_tree.ml wrote: prefix order. *)
let rec read = function
  | "n" :: name :: rest -> (Name name, rest)
  | "s" :: text :: rest -> (Text text, rest)
  | "l" :: k :: rest ->
      let items, rest = read_n (int_of_string k) rest in
      (Items items, rest)
  | "p" :: rest ->
      let a, rest = read rest in
      let b, rest = read rest in
      (Tuple (a, b), rest)
  | "a" :: k :: rest ->
      let f, rest = read rest in
      let args, rest = read_n (int_of_string k) rest in
      (Apply (f, args), rest)
  | _ -> raise Unsupported

and read_n k fields =
  if k <= 0 then ([], fields)
  else
    let t, rest = read fields in
    let ts, rest = read_n (k - 1) rest in
    (t :: ts, rest)

type (_, _) same = Same : ('a, 'a) same

let rec same : type a b. a ty -> b ty -> (a, b) same option =
 fun a b ->
  match (a, b) with
  | Tactic, Tactic -> Some Same
  | Thm, Thm -> Some Same
  | Term, Term -> Some Same
  | Type, Type -> Some Same
  | String, String -> Some Same
  | List x, List y -> ( match same x y with Some Same -> Some Same | None -> None)
  | Pair (x1, y1), Pair (x2, y2) -> (
      match (same x1 x2, same y1 y2) with Some Same, Some Same -> Some Same | _ -> None)
  | Arrow (x1, y1), Arrow (x2, y2) -> (
      match (same x1 x2, same y1 y2) with Some Same, Some Same -> Some Same | _ -> None)
  | _ -> None

type some_ty = T : 'a ty -> some_ty

let lookup name = match Hashtbl.find_opt table name with Some v -> v | None -> raise Unsupported

(* The type of a name or an application (what else has no type without context). *)
let rec type_of = function
  | Name name -> (match lookup name with Value (ty, _) -> T ty)
  | Apply (f, args) -> (match type_of f with T ty -> result ty args)
  | Text _ | Items _ | Tuple _ -> raise Unsupported

and result : type f. f ty -> tree list -> some_ty =
 fun ty args ->
  match (ty, args) with
  | _, [] -> T ty
  | Arrow (_, codomain), _ :: rest -> result codomain rest
  | _ -> raise Unsupported

(* [t] as a value of [want]; Unsupported where it is none. [check] first, without
   evaluating anything; [eval] in the attempt's child. *)
let rec eval : type a. a ty -> tree -> a =
 fun want t ->
  match (t, want) with
  | Text s, String -> s
  | Items xs, List elt -> List.rev_map (eval elt) (List.rev xs)  (* the last first *)
  | Tuple (a, b), Pair (x, y) ->
      let vb = eval y b in
      let va = eval x a in
      (va, vb)
  | Name name, _ -> (
      match lookup name with
      | Value (ty, v) -> ( match same ty want with Some Same -> v | None -> raise Unsupported))
  | Apply (f, args), _ -> (
      match type_of f with
      | T ty ->
          let finish = apply ty want args in
          finish (eval ty f))
  | _ -> raise Unsupported

(* The arguments evaluated, right to left; then a function of their head that applies
   it to them in order. *)
and apply : type f a. f ty -> a ty -> tree list -> f -> a =
 fun ty want args ->
  match (ty, args) with
  | _, [] -> ( match same ty want with Some Same -> fun v -> v | None -> raise Unsupported)
  | Arrow (domain, codomain), x :: rest ->
      let finish = apply codomain want rest in
      let v = eval domain x in
      fun f -> finish (f v)
  | _ -> raise Unsupported

let rec check : type a. a ty -> tree -> unit =
 fun want t ->
  match (t, want) with
  | Text _, String -> ()
  | Items xs, List elt -> List.iter (check elt) xs
  | Tuple (a, b), Pair (x, y) ->
      check x a;
      check y b
  | Name name, _ -> (
      match lookup name with Value (ty, _) -> if same ty want = None then raise Unsupported)
  | Apply (f, args), _ -> (
      match type_of f with
      | T ty ->
          check ty f;
          check_args ty want args)
  | _ -> raise Unsupported

and check_args : type f a. f ty -> a ty -> tree list -> unit =
 fun ty want args ->
  match (ty, args) with
  | _, [] -> if same ty want = None then raise Unsupported
  | Arrow (domain, codomain), x :: rest ->
      check domain x;
      check_args codomain want rest
  | _ -> raise Unsupported

(* The tactic the fields denote, to evaluate in the child; None if they denote none
   here (the answer is then compiled). *)
let tactic fields =
  match read fields with
  | t, [] -> (
      match check Tactic t with
      | () -> Some (fun () -> eval Tactic t)
      | exception (Unsupported | Stack_overflow) -> None)
  | _ -> None
  | exception (Unsupported | Failure _ | Stack_overflow) -> None
