"""Tunables and heuristics of every kernel family, one module per family, free of the CuTe DSL.

``configs/<family>.py`` holds the family's frozen ``Config`` dataclass, ``choose_config`` (the tile
heuristic: no GPU time), for families that split K ``choose_schedule`` (tile, K-split count and
orientation chosen together by the wave model in ``configs/waves.py``), and ``supports`` (whether
the kernel can run a problem).  The kernel itself lives in ``kernels/<family>_*.py`` and imports
its ``Config`` from here.  Keeping these apart lets a process pick a configuration and find its
compiled kernel in the disk cache without importing the DSL compiler (~3 s).

Imports: nothing of ours (the family modules import ``waves``).
"""
