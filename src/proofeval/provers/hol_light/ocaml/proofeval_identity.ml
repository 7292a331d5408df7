(* Weak tables keyed by physical identity, for the kernel log (proofeval_kernel_log.ml).
   Compiled, because HOL Light's lexer reads the all-capitals K1 as a value name. *)

module Make (T : sig
  type t
end) =
Ephemeron.K1.Make (struct
  type t = T.t

  let equal = ( == )

  (* The default reads too little of a theorem (similar ones would collide); reading
     much more costs more per inference than it saves: recording BIGNUM_ADD_CORRECT
     took 22 s natively reading 40 words of 200, 14 s reading 12 of 40. *)
  let hash = Hashtbl.hash_param 12 40
end)
