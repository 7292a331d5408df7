"""Checking attempts on this machine (or on executors a caller gives): the one engine
(engine.py) that every command, the API, the service and Ray's nodes use, and the API's
checker of (problem, proof) items on top of it (checker.py)."""
