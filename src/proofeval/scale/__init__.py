"""Checking at scale: the Python API, its HTTP service and client, Ray."""
