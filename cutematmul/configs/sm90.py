"""Tunables and the tile heuristic of the Hopper HGEMM family (``kernels/sm90_hgemm.py``).

DSL-free, so a configuration is chosen (and a cached kernel found) without importing the CuTe DSL.

Imports: nothing of ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Shared memory a CTA may use on sm_90 (227 KiB), less what the barriers and alignment need.
_SMEM_BYTES = 232448
_SMEM_RESERVED = 2048
_THREADS_PER_WARPGROUP = 128
_PRODUCER_REGISTERS = 40


@dataclass(frozen=True)
class Config:
    """Tunables of the Hopper kernel; one compiled kernel per distinct value."""

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    cluster_m: int = 1
    cluster_n: int = 1
    raster_group: int = 8
    epi_n: int = 32
    epi_stages: int = 4
    stages: int = 0  # 0: as many as fit in shared memory

    @property
    def name(self) -> str:
        return (
            f"sm90_{self.tile_m}x{self.tile_n}x{self.tile_k}_c{self.cluster_m}x{self.cluster_n}"
            f"_g{self.raster_group}_s{self.ab_stages(2)}"
        )

    @property
    def consumer_warpgroups(self) -> int:
        return self.tile_m // 64

    def ab_stages(self, itemsize: int) -> int:
        """Stages of the A/B ring: the requested count, or as many as fit."""
        if self.stages:
            return self.stages
        per_stage = (self.tile_m + self.tile_n) * self.tile_k * itemsize
        epilogue = self.tile_m * self.epi_n * itemsize * self.epi_stages
        return min(8, (_SMEM_BYTES - _SMEM_RESERVED - epilogue) // per_stage)

    def validate(self) -> None:
        if self.tile_m not in (64, 128):
            raise ValueError(f"Config.tile_m must be 64 or 128, got {self.tile_m}.")
        if self.tile_n not in (64, 128, 192, 256):
            raise ValueError(f"Config.tile_n must be 64, 128, 192 or 256, got {self.tile_n}.")
        if self.tile_k != 64:
            raise ValueError(f"Config.tile_k must be 64, got {self.tile_k}.")
        if (self.cluster_m, self.cluster_n) not in ((1, 1), (2, 1), (1, 2)):
            raise ValueError(
                "Config cluster must be 1x1, 2x1 or 1x2, "
                f"got {self.cluster_m}x{self.cluster_n}."
            )
        if self.tile_n % self.epi_n or self.epi_n % 16:
            raise ValueError(
                f"Config.epi_n must divide tile_n and be a multiple of 16, got {self.epi_n}."
            )
        if self.epi_stages < 2:
            raise ValueError(f"Config.epi_stages must be at least 2, got {self.epi_stages}.")
        if self.ab_stages(2) < 2:
            raise ValueError(f"Config {self} leaves room for fewer than 2 pipeline stages.")
        if self.raster_group < 1:
            raise ValueError(f"Config.raster_group must be >= 1, got {self.raster_group}.")


def supports(m, n, k, batch, dtype, a_major, b_major, align_a, align_b, align_c) -> str | None:
    """None when this family can run the problem, else the reason it cannot."""
    if dtype not in ("float16", "bfloat16"):
        return f"sm90 HGEMM takes float16/bfloat16, not {dtype}"
    if min(align_a, align_b, align_c) < 8:
        return "sm90 HGEMM needs 16-byte aligned operands (TMA)"
    if k < 1:
        return "sm90 HGEMM needs K >= 1"
    return None


# Relative per-SM throughput of each tile shape when every SM is busy (larger tiles reuse more).
_TILE_EFFICIENCY = {(128, 256): 1.0, (128, 128): 0.9, (64, 128): 0.7}


def choose_config(m: int, n: int, k: int, batch: int, num_sms: int) -> Config:
    """Pick the tile shape that maximizes (tile efficiency) x (fraction of SM time used).

    With persistent CTAs the last wave is what idles SMs: 128 tiles on 132 SMs use 97% of the
    machine, 256 tiles use 97% of two waves, 140 tiles only 53%.  The raster group is a fixed
    compile-time bound that the kernel clamps to the number of tile rows at run time, so it never
    causes a recompile per size.
    """

    def score(tm, tn):
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * max(batch, 1)
        waves = math.ceil(tiles / num_sms)
        return _TILE_EFFICIENCY[(tm, tn)] * tiles / (waves * num_sms)

    tm, tn = max(_TILE_EFFICIENCY, key=lambda t: score(*t))
    return Config(tile_m=tm, tile_n=tn, raster_group=8)
