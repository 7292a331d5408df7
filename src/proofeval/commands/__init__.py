"""One module per subcommand: each has `configure(subparsers)`, which registers its parser
with `set_defaults(handler=run)`, and `run(args) -> int`."""
