(* HOL Light's quotation expander, for camlp5 when it preprocesses HOL Light text for
   the native compiler (system.ml installs the same one in the toplevel): `tm` is
   parse_term "tm", `:ty` parse_type "ty", `;p` parse_qproof, `s:` the string s. *)
let expand s =
  if s = "" then failwith "Empty quotation"
  else
    let escaped a b = String.escaped (String.sub s a b) in
    let n = String.length s in
    match s.[0] with
    | ':' -> "parse_type \"" ^ escaped 1 (n - 1) ^ "\""
    | ';' -> "parse_qproof \"" ^ String.escaped s ^ "\""
    | _ when s.[n - 1] = ':' -> "\"" ^ escaped 0 (n - 1) ^ "\""
    | _ -> "parse_term \"" ^ String.escaped s ^ "\""

let () = Quotation.add "tot" (Quotation.ExStr (fun _ -> expand))
