"""The HTTP checking service (`proofeval serve`)."""
