"""From problems to answers: prompts, model calls, and extracting the proof from an answer."""
