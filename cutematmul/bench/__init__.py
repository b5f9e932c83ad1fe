"""Benchmark against cuBLAS (filled in below)."""
