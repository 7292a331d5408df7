(* proofeval's Why3 program, against Why3's OCaml API (Why3 1.5 and 1.8: what differs
   between them is in Why3_compat, why3_compat_1_5.ml or why3_compat_1_8.ml).

   One enumeration of a WhyML file's verification conditions serves both commands, so that
   the Coq problems and the automatic provers' results name the same goals:
   modules in source order, each module's goals as Why3 splits a theory into tasks, and
   with "split" each task further by the split_vc transformation.

     tool CONFIG coq FILE LIBDIR OUTDIR split|whole
       prints each VC with Why3's Coq driver to OUTDIR/<n>.v; one line per VC on stdout:
       <n> TAB <module> TAB <goal> TAB <index within the goal>
     tool CONFIG atp FILE LIBDIR split|whole BUDGET STRATEGY PROVER...
       runs the provers (names as Why3's config gives them) on each VC within BUDGET
       seconds of wall clock; one line per VC:
       <n> TAB <module> TAB <goal> TAB <index> TAB valid|unknown TAB <provers> TAB <seconds>
       STRATEGY "auto3" is shaped as Why3's Auto_level_3 (all provers at 1 s; split_vc;
       all at 5 s; introduce_premises, inline_goal, split_all_full; all at 30 s), every
       step capped by what is left of the budget; "flat" is one call of all provers.
   LIBDIR is added to Why3's load path (the source's own directory, where the files it
   `use`s live). *)

open Why3

let die fmt = Format.kasprintf (fun s -> prerr_endline s; exit 2) fmt

type vc = { number : int; modname : string; goal : string; index : int; task : Task.task }

let modules env file =
  let mods, _ = Env.read_file Pmodule.mlw_language env file in
  let line m =
    match m.Pmodule.mod_theory.Theory.th_name.Ident.id_loc with
    | Some loc -> let _, l, c = Why3_compat.start loc in (l, c)
    | None -> (max_int, 0)
  in
  let all = Wstdlib.Mstr.fold (fun _ m acc -> m :: acc) mods [] in
  List.stable_sort (fun a b -> compare (line a) (line b)) all

let vcs env file split =
  let counter = ref 0 in
  let of_module m =
    let th = m.Pmodule.mod_theory in
    let name = th.Theory.th_name.Ident.id_string in
    let tasks = Task.split_theory th None None in
    List.concat_map
      (fun task ->
        let goal = (Task.task_goal task).Decl.pr_name.Ident.id_string in
        let parts = if split then Trans.apply_transform "split_vc" env task else [ task ] in
        List.mapi
          (fun index task ->
            incr counter;
            { number = !counter; modname = name; goal; index; task })
          parts)
      tasks
  in
  List.concat_map of_module (modules env file)

let print_coq main env file outdir split =
  let driver = Why3_compat.coq_driver main env in
  List.iter
    (fun vc ->
      let path = Filename.concat outdir (Printf.sprintf "%d.v" vc.number) in
      let oc = open_out path in
      let fmt = Format.formatter_of_out_channel oc in
      Driver.print_task driver fmt vc.task;
      Format.pp_print_flush fmt ();
      close_out oc;
      Printf.printf "%d\t%s\t%s\t%d\n%!" vc.number vc.modname vc.goal vc.index)
    (vcs env file split)

(* --- automatic provers ------------------------------------------------------------- *)

type prover = { name : string; command : string; driver : Driver.driver }

(* A prover by its name in Why3's configuration ("Z3"), the plain one (no alternative such
   as "counterexamples") when several versions or alternatives are configured. *)
let load_prover config main env name =
  let found = Whyconf.filter_provers config (Whyconf.parse_filter_prover name) in
  let plain (p, _) = p.Whyconf.prover_altern = "" in
  let choices = List.filter plain (Whyconf.Mprover.bindings found) in
  match choices with
  | (_, pc) :: _ ->
      let command = Whyconf.get_complete_command pc ~with_steps:false in
      { name; command; driver = Why3_compat.prover_driver main env pc }
  | [] -> die "prover %s: not in Why3's configuration" name

(* All provers on [task] at once, for [seconds]; the first to say Valid, and when, or None
   once all have answered otherwise. The others are interrupted. *)
let call_all main provers task seconds =
  let seconds = max 1 seconds in
  let calls =
    List.map
      (fun p ->
        let call =
          Why3_compat.prove_task main ~command:p.command ~seconds ~megabytes:2000 p.driver task
        in
        (call, p.name))
      provers
  in
  (* A call is a server request id: compared by value, not physically. *)
  let pending = ref calls and found = ref None in
  while !found = None && !pending <> [] do
    List.iter
      (fun (call, update) ->
        match update with
        | _ when not (List.mem_assoc call !pending) -> ()
        | Call_provers.ProverFinished r ->
            pending := List.filter (fun (c, _) -> c <> call) !pending;
            if r.Call_provers.pr_answer = Call_provers.Valid && !found = None then
              found := Some (List.assoc call calls, r.Call_provers.pr_time)
        | Call_provers.InternalFailure _ | Call_provers.ProverInterrupted ->
            pending := List.filter (fun (c, _) -> c <> call) !pending
        | Call_provers.NoUpdates | Call_provers.ProverStarted -> ())
      (Call_provers.get_new_results ~blocking:true)
  done;
  (* Answers of interrupted calls may still come: later waits ignore calls not theirs. *)
  List.iter (fun (call, _) -> Why3_compat.interrupt_call main call) !pending;
  !found

(* Whether the strategy closes [task] before [deadline]; the provers that closed its
   leaves are added to [used]. *)
let prove main env provers strategy deadline used task =
  let left () = int_of_float (ceil (deadline -. Unix.gettimeofday ())) in
  let call seconds task =
    let budget = min seconds (left ()) in
    if budget < 1 then false
    else
      match call_all main provers task budget with
      | Some (name, _) -> used := name :: !used; true
      | None -> false
  in
  (* A transformation that applies, with its subgoals; None when it fails or changes
     nothing (as Why3's strategies read it). *)
  let apply trans task =
    match Trans.apply_transform trans env task with
    | [ t ] when Task.task_equal t task -> None
    | subgoals -> Some subgoals
    | exception _ -> None
  in
  let all f tasks = List.for_all f tasks in
  let rec start task =
    call 1 task
    || match apply "split_vc" task with
       | Some subgoals -> all start subgoals
       | None -> call 5 task || introduce task
  and introduce task =
    match apply "introduce_premises" task with
    | Some subgoals -> all after_intro subgoals
    | None -> longer task
  and after_intro task =
    match apply "inline_goal" task with
    | Some subgoals -> all after_inline subgoals
    | None -> longer task
  and after_inline task =
    match apply "split_all_full" task with
    | Some subgoals -> all start subgoals
    | None -> longer task
  and longer task = call 30 task in
  match strategy with
  | "auto3" -> start task
  | "flat" -> call max_int task
  | other -> die "unknown strategy %s (auto3 or flat)" other

let run_atp config main env file split budget strategy names =
  let provers = List.map (load_prover config main env) names in
  List.iter
    (fun vc ->
      let started = Unix.gettimeofday () in
      let used = ref [] in
      let closed = prove main env provers strategy (started +. budget) used vc.task in
      let by = String.concat "+" (List.sort_uniq compare !used) in
      Printf.printf "%d\t%s\t%s\t%d\t%s\t%s\t%.3f\n%!" vc.number vc.modname vc.goal vc.index
        (if closed then "valid" else "unknown")
        (if closed then by else "")
        (Unix.gettimeofday () -. started))
    (vcs env file split)

let () =
  let split = function
    | "split" -> true
    | "whole" -> false
    | other -> die "expected split or whole, got %s" other
  in
  match Array.to_list Sys.argv with
  | _ :: conf :: command :: args ->
      let config = Whyconf.init_config (Some conf) in
      let main = Whyconf.get_main config in
      Whyconf.load_plugins main; (* the TPTP printer (E, SPASS) is a plugin *)
      Prove_client.set_max_running_provers (max 1 (Whyconf.running_provers_max main));
      let env libdir = Env.create_env (libdir :: Whyconf.loadpath main) in
      (try
         match command, args with
         | "coq", [ file; libdir; outdir; granularity ] ->
             print_coq main (env libdir) file outdir (split granularity)
         | "atp", file :: libdir :: granularity :: budget :: strategy :: (_ :: _ as provers) ->
             let env = env libdir in
             run_atp config main env file (split granularity) (float_of_string budget)
               strategy provers
         | _ -> die "usage: tool CONFIG (coq FILE LIBDIR OUTDIR G | atp FILE LIBDIR G BUDGET STRATEGY P...)"
       with
      | Loc.Located (loc, e) ->
          let f, l, c = Why3_compat.start loc in
          die "%s:%d:%d: %a" f l c Exn_printer.exn_printer e
      | e -> die "%a" Exn_printer.exn_printer e)
  | _ -> die "usage: tool CONFIG (coq FILE LIBDIR OUTDIR G | atp FILE LIBDIR G BUDGET STRATEGY P...)"
