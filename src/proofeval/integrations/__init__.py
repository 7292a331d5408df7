"""proofeval where evaluators and RL trainers already work: inspect_ai tasks, a scorer and
proof-state tools (inspect_*.py, `pip install proofeval[inspect]`), and reward functions
for TRL, verl and any other trainer (rewards.py). Every verdict is the ordinary checker's."""
