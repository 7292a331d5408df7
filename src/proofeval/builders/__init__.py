"""Builders of new benchmarks: from HOL Light sources and from Why3 and Frama-C programs;
categories, complication, profiling, obfuscation."""
