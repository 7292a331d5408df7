"""The baselines papers print beside models: tactic portfolios and hammers, and Why3's
automatic provers."""
