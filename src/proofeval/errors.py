"""Errors the command line reports as one line, never as a traceback."""


class InputError(Exception):
    """Bad user input: a missing file, a malformed line, a missing tool."""
