"""Tunables and the tile heuristic of the sm80 mma.sync HGEMM family (``kernels/sm80_hgemm.py``).

DSL-free, so a configuration is chosen (and a cached kernel found) without importing the CuTe DSL.

Imports: nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass

_DTYPES = ("float16", "bfloat16")
# Elements of a 16-bit type in one 128-bit vector (the unit of every global copy here).
_VEC = 8
_VEC_BYTES = 16
# Largest opt-in dynamic shared memory per CTA among the targets (sm_90); the host compares
# ``Config.smem_bytes`` with its own device's limit.
_MAX_SMEM_BYTES = 227 * 1024
# Shared buffers start on this boundary so that every stage starts on a swizzle period (lets the
# compiler fold stage offsets into addresses; the XOR swizzle is correct for any base).
_SMEM_ALIGN = 1024
# Accumulators per thread above this spill registers (255 registers per thread at most).
_MAX_ACC_PER_THREAD = 128


def chunk_swizzle(row_bytes: int) -> tuple[int, int, int]:
    """(bits, base, shift) of the XOR swizzle on byte addresses for shared-memory rows of
    ``row_bytes`` that ``ldmatrix`` reads (this family's rings, and the SIMT family's
    tensor-core row-streaming kernel).

    The 16-byte chunk index (address bits 4..6) is XORed with row-index bits of the address
    taken from bit 7 upwards (above one 128-byte bank line), so eight consecutive rows read at
    the same column land on eight different 16-byte bank groups.
    """
    bits = min(3, max(0, (row_bytes // _VEC_BYTES).bit_length() - 1))
    shift = max(3, row_bytes.bit_length() - 1 - 4)
    return bits, 4, shift


@dataclass(frozen=True)
class Config:
    """Tunables of the kernel: CTA tile, pipeline depth, warp grid and CTA rasterization."""

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 32
    stages: int = 4
    warps_m: int = 2
    warps_n: int = 2
    raster_group: int = 8

    @property
    def name(self) -> str:
        return (
            f"{self.tile_m}x{self.tile_n}x{self.tile_k}"
            f"_s{self.stages}_w{self.warps_m}x{self.warps_n}_g{self.raster_group}"
        )

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per CTA (the C staging tile reuses the A/B ring)."""
        ring = (self.tile_m + self.tile_n) * self.tile_k * self.stages
        return max(ring, self.tile_m * self.tile_n) * 2 + _SMEM_ALIGN

    def validate(self) -> None:
        """Raise ValueError naming the first unsupported combination."""
        for field in ("tile_m", "tile_n"):
            value = getattr(self, field)
            if value not in (32, 64, 128, 256):
                raise ValueError(f"Config.{field} must be 32, 64, 128 or 256, got {value}.")
        if self.tile_k not in (32, 64):
            raise ValueError(f"Config.tile_k must be 32 or 64, got {self.tile_k}.")
        if not 2 <= self.stages <= 8:
            raise ValueError(f"Config.stages must be between 2 and 8, got {self.stages}.")
        if self.warps_m * self.warps_n not in (1, 2, 4, 8):
            raise ValueError(
                f"Config.warps_m * warps_n must be 1, 2, 4 or 8, got "
                f"{self.warps_m} x {self.warps_n}."
            )
        if self.raster_group < 1:
            raise ValueError(f"Config.raster_group must be >= 1, got {self.raster_group}.")
        # Each warp owns whole 16x16 blocks of the tile (one ldmatrix.x4 per operand and k-step).
        if self.tile_m % (16 * self.warps_m) or self.tile_n % (16 * self.warps_n):
            raise ValueError(
                f"Config tile {self.tile_m}x{self.tile_n} does not split into 16x16 blocks "
                f"over {self.warps_m}x{self.warps_n} warps."
            )
        acc = self.tile_m * self.tile_n // self.threads
        if acc > _MAX_ACC_PER_THREAD:
            raise ValueError(
                f"Config {self.name} keeps {acc} accumulators per thread; at most "
                f"{_MAX_ACC_PER_THREAD} fit in registers (use more warps or a smaller tile)."
            )
        # Every thread moves whole 16-byte vectors, the same number of them, in each copy.
        for what, rows, cols in (
            ("A tile (K-major)", self.tile_m, self.tile_k),
            ("B tile (K-major)", self.tile_n, self.tile_k),
            ("A tile (M-major)", self.tile_k, self.tile_m),
            ("B tile (N-major)", self.tile_k, self.tile_n),
            ("C tile", self.tile_m, self.tile_n),
        ):
            per_row = cols // _VEC
            if self.threads % per_row or rows % (self.threads // per_row):
                raise ValueError(
                    f"Config {self.name}: {self.threads} threads cannot copy the {what} "
                    f"of {rows}x{cols} elements in whole 16-byte vectors."
                )
        if self.smem_bytes > _MAX_SMEM_BYTES:
            raise ValueError(
                f"Config {self.name} needs {self.smem_bytes} bytes of shared memory; "
                f"at most {_MAX_SMEM_BYTES} exist on any target."
            )


def supports(m, n, k, batch, dtype, a_major, b_major, align_a, align_b, align_c) -> str | None:
    """None when this kernel family can run the problem, else the reason it cannot."""
    if dtype not in _DTYPES:
        return f"the sm80 kernel takes float16 or bfloat16 operands, not {dtype}"
    if a_major not in ("k", "m") or b_major not in ("k", "n"):
        return f"unknown operand majors a={a_major!r}, b={b_major!r}"
    if min(m, n, k) < 1:
        return f"empty problem {m}x{n}x{k}"
    for name, align in (("A", align_a), ("B", align_b), ("C", align_c)):
        if align < _VEC or align % _VEC:
            return f"{name} is aligned to {align} elements; the sm80 kernel needs 16 bytes ({_VEC})"
    return None


# Candidates from the most to the least work per CTA; all fit the 99 KiB of sm_86/sm_89.
_CANDIDATES = (
    Config(tile_m=128, tile_n=256, tile_k=32, stages=3, warps_m=2, warps_n=4),
    Config(tile_m=128, tile_n=128, tile_k=32, stages=4, warps_m=2, warps_n=2),
    Config(tile_m=128, tile_n=64, tile_k=32, stages=4, warps_m=2, warps_n=2),
    Config(tile_m=64, tile_n=128, tile_k=32, stages=4, warps_m=2, warps_n=2),
    Config(tile_m=64, tile_n=64, tile_k=32, stages=4, warps_m=2, warps_n=2),
)


def choose_config(m: int, n: int, k: int, batch: int, num_sms: int,
                  math: str = "float16") -> Config:
    """Largest tile that still gives every SM work; the big tile only for several full waves.
    ``math`` (float16 or bfloat16) does not change the tile."""
    def ctas(cfg):
        return -(-m // cfg.tile_m) * -(-n // cfg.tile_n) * batch

    big, default, *small = _CANDIDATES
    if ctas(big) >= 4 * num_sms:
        return big
    if ctas(default) >= num_sms:
        return default
    # Prefer the narrow side of the tile along the smaller matrix mode.
    for cfg in (small if m >= n else (small[1], small[0], small[2])):
        if ctas(cfg) >= num_sms:
            return cfg
    return small[-1]
