"""Reports of a run: the per-category table, results.csv, the s2n-bignum-bench results CSV."""
