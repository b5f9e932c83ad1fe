"""The wave model: estimated time of a tile shape and a split-K count on a GPU of ``num_sms`` SMs.

One model for every family that splits K, so tile and split are chosen together and the choice
costs no GPU time.  A product's work units are its output tiles times its K-splits; they run in
waves of ``num_sms * slots`` (CTAs resident per SM).  Estimated time is the larger of

* compute: waves x the time one unit takes (its padded tile over its share of K, at the family's
  per-SM rate times the tile shape's efficiency, plus a fixed pipeline fill and drain); a
  partial last wave costs less when its SMs run fewer CTAs faster (``Rate.tail_scaling``), and
* memory: the unique bytes of A, B and C over the bandwidth the active CTAs can draw: each
  about ``Rate.saturation`` / ``num_sms`` of it (on an H200, 64 CTAs streamed a 16 x 8192 x
  8192 product's 130 MB at 3.3 TB/s, 32 CTAs a 16 x 4096 x 4096 one's at 2 TB/s; the narrow
  tiles of small-M products hold fewer bytes in flight and need most SMs), or where a family
  sets ``Rate.l2_bandwidth`` (one-pass TF32) the CTAs' tile reads through L2 if longer,

plus, when K is split, the reduction: the fp32 partials written and read again, and one launch.
Stream-K (``estimate_streamk``) has no partial wave: each CTA's share of the iterations, plus the
partial tiles of the tiles its share cuts.
The constants are coarse (H100/H200-class); only the ranking of candidates matters, and the
benchmark (``python -m cutematmul.bench``) is the judge of the choices.

Imports: nothing of ours.
"""

from __future__ import annotations

from typing import NamedTuple

#: Device-memory bandwidth (bytes/s) and the host-side cost of one extra launch (s).
BANDWIDTH = 3.3e12
LAUNCH_SECONDS = 2.5e-6
#: What each wave pays besides its math: filling the pipeline and draining the epilogue (s).
WAVE_SECONDS = 1.0e-6
#: The most K-splits considered, and the 32-bit limit on the partial sums' element count.
MAX_SPLITS = 16
#: Deep splits: a product whose output tiles, split ``MAX_SPLITS`` ways, are still fewer than
#: the SMs (a few output tiles and a long K: a 64 x 8 result of K = 65536, the weight gradient
#: of a small layer) may split up to this many ways, each deep split keeping at least
#: ``Rate.deep_k_tiles`` K-tiles.  H200, 2026-12-02, us, 64 splits
#: allowed everywhere against the 16 cap (cuBLAS): fp32 64x8x8192 10.6 / 22.1 (11.7), 64x8x65536
#: 42.9 / 147.9 (29.3), 1x512x16384 14.2 / 24.1 (15.8), 7x1000x8191 28.8 / 41.9 (31.3); fp16
#: 64x8x65536 11.3 / 15.4 (10.3), 32x16x32768 7.3 / 8.1 (7.6).  Where 16 splits already made
#: more CTAs than SMs it lost (fp32 32x4096x16384 131.7 / 122.3 at 28 splits), and so did
#: sm90 splits of only 4 K-tiles (fp16 64x8x8192 nt 5.4 / 4.5 at 30 splits), where SIMT splits
#: of 8 K-tiles of 16 won (fp32 64x8x8192 above).
DEEP_SPLITS = 64
#: A family whose Rate sets ``deep_ctas_per_sm`` may split a deep product of one or a few tiles
#: further, until tiles x splits reach that many CTAs per SM (``split_choices``).  The SIMT
#: kernel's one or two tiles at 64 splits left half the SMs idle: H200, 2026-12-03, fp32
#: "highest", us at 64 / 128 / 256 splits (cuBLAS SGEMM): 20x82x94856 tn 87.8 / 52.1 / 42.4
#: (39.6), 64x64x100000 tn 86.9 / 50.2 / 38.4 (35.1), 64x8x65536 43.0 / 27.6 / 25.0 (29.7),
#: 72x13x130416 80.8 / 50.0 / 56.4 (116.6), 14x237x59184 tn (two tiles) 64.5 / 45.8 / 49.9
#: (42.8), 30x66x16568 23.4 / 18.5 / 20.0 (21.1); where the 64 splits already made 256 CTAs or
#: more, further splits lost (78x310x45920 tn, six tiles, 108.0 / 116.7; 256x256x65536 tn
#: 172.0 / 182.6; 143x51x9232 tn, four tiles at 58 splits, 17.5 against 20.4 at 128).
#: Every forced result was checked against float64.  ``DEEP_MOST_SPLITS`` bounds such a split.
DEEP_CTAS_PER_SM = 2
DEEP_MOST_SPLITS = 512
#: Relative difference of estimates below which two candidates count as equally fast.
TOLERANCE = 0.01
_INT32_MAX = 2**31 - 1
#: 1 / the fraction of the SMs whose CTAs draw the whole device-memory bandwidth.
_SATURATION = 2.0


class Rate(NamedTuple):
    """What a family sustains: flop/s per SM, CTAs resident per SM, bytes per input and output
    element, the fewest K-tiles a split may get (below that the pipeline never fills), the
    fixed cost of going through the workspace (the reduction's launch and latency),
    1 / the fraction of a wave's CTAs that draw the whole device-memory bandwidth, and how a
    partial last wave's time scales with the CTAs it leaves on its busiest SM: a wave of ``r``
    of ``slots`` CTAs per SM takes ``(r / slots) ** tail_scaling`` of a full wave's time (0: as
    long as a full wave, each CTA then running faster; 1: in proportion), and the fewest
    K-tiles of a deep split (``DEEP_SPLITS``; never fewer than ``min_k_tiles``, which 0
    means), what each wave but the last pays besides its math (``WAVE_SECONDS``; less where a
    kernel overlaps one tile's epilogue with the next one's math; the last wave's epilogue has
    nothing to hide behind and pays ``WAVE_SECONDS``), the most K-splits the kernel is
    offered with, the saturation of an unsplit product where it differs (0: the same; a
    kernel that runs unsplit products in another way, such as clustered), the tile rows a
    cluster spans: rows are launched in whole clusters, so an odd count of tile rows in 2x1
    clusters leaves the last cluster's second CTA without work, yet it holds an SM, the
    CTAs per SM a deep split may reach past ``DEEP_SPLITS`` (0: none; ``DEEP_CTAS_PER_SM``),
    the tile's efficiency when unsplit where it differs (0: the same), and the bandwidth
    (bytes/s) at which L2 serves the CTAs' tile reads (A's and B's tiles for each K-tile,
    B's shared by a cluster's rows; 0: not a bound)."""

    flops_per_sm: float
    slots: int
    in_bytes: int
    out_bytes: int
    min_k_tiles: int
    reduce_seconds: float = LAUNCH_SECONDS
    saturation: float = _SATURATION
    tail_scaling: float = 0.0
    deep_k_tiles: int = 0
    wave_seconds: float = WAVE_SECONDS
    max_splits: int = DEEP_SPLITS
    unsplit_saturation: float = 0.0
    cluster_rows: int = 1
    deep_ctas_per_sm: int = 0
    unsplit_efficiency: float = 0.0
    l2_bandwidth: float = 0.0


def launched_tiles(m: int, n: int, batch: int, tile_m: int, tile_n: int, rate: Rate) -> int:
    """The CTAs' tiles a product launches: its output tiles, tile rows in whole clusters."""
    rows = -(-m // tile_m)
    rows = -(-rows // rate.cluster_rows) * rate.cluster_rows
    return rows * -(-n // tile_n) * batch


def estimate(m: int, n: int, k: int, batch: int, num_sms: int, tile_m: int, tile_n: int,
             tile_k: int, splits: int, efficiency: float, rate: Rate,
             workspace: bool = False) -> float:
    """Estimated seconds of the product with this tile shape and split count; ``workspace``:
    the product goes through the fp32 workspace and the reduction even unsplit."""
    tiles = launched_tiles(m, n, batch, tile_m, tile_n, rate)
    units = tiles * splits
    slots = num_sms * rate.slots
    full, rest = divmod(units, slots)  # whole waves, and the CTAs of a partial last one
    waves = full + (rest > 0)
    k_tiles = -(-k // tile_k)
    per_split = -(-k_tiles // splits)
    if splits == 1 and rate.unsplit_efficiency:
        efficiency = rate.unsplit_efficiency
    unit_seconds = 2.0 * tile_m * tile_n * per_split * tile_k * rate.slots / (
        rate.flops_per_sm * efficiency)
    compute = full * (unit_seconds + rate.wave_seconds)
    if rest:
        busiest = -(-rest // num_sms)
        compute += unit_seconds * (busiest / rate.slots) ** rate.tail_scaling + rate.wave_seconds
    compute += WAVE_SECONDS - rate.wave_seconds  # the last wave's epilogue stays exposed
    # The CTAs of the average wave (with the default saturation, a product of two waves or
    # more always draws the whole bandwidth).
    saturation = rate.unsplit_saturation if splits == 1 and rate.unsplit_saturation else None
    memory = _memory_seconds(m, n, k, batch, rate, units / waves, slots, saturation)
    if rate.l2_bandwidth:
        # Every CTA's reads of A and B tiles through L2 (B multicast to a cluster's rows).
        reads = units * (tile_m + tile_n / rate.cluster_rows) * per_split * tile_k * rate.in_bytes
        memory = max(memory, reads / rate.l2_bandwidth)
    reduce = 0.0
    if splits > 1 or workspace:
        reduce = m * n * batch * (8 * splits + rate.out_bytes) / BANDWIDTH + rate.reduce_seconds
    return max(compute, memory) + reduce


#: Stream-K's fixup, fitted to forced runs on an H200 (2026-12-01, fp16, 1536^3 and 2560^3,
#: within 10%): each partial tile a CTA hands over costs a round trip (the flag's release and
#: acquire, barriers) plus its bytes through L2 at this rate per SM; every launch pays the
#: flags' memset.
STREAMK_PEER_SECONDS = 1.5e-6
STREAMK_BYTES_PER_SM = 50e9
STREAMK_SECONDS = 1.2e-6


def estimate_streamk(m: int, n: int, k: int, batch: int, num_sms: int, tile_m: int, tile_n: int,
                     tile_k: int, efficiency: float, rate: Rate) -> float:
    """Estimated seconds of the product under stream-K: every CTA takes an equal share of all
    (tile, K-tile) iterations, so no wave is partial; a tile whose iterations straddle CTAs
    costs a partial tile written by each extra CTA and read back by the tile's first CTA."""
    tiles = -(-m // tile_m) * -(-n // tile_n) * batch
    k_tiles = -(-k // tile_k)
    slots = num_sms * rate.slots
    iterations = tiles * k_tiles
    share = -(-iterations // slots)
    step = 2.0 * tile_m * tile_n * tile_k / (rate.flops_per_sm * efficiency)
    fixup = 0.0
    if iterations % slots or share % k_tiles:
        handovers = 1 + -(-k_tiles // share)
        fixup = handovers * (STREAMK_PEER_SECONDS + tile_m * tile_n * 4 / STREAMK_BYTES_PER_SM)
    compute = share * step + WAVE_SECONDS + fixup + STREAMK_SECONDS
    return max(compute, _memory_seconds(m, n, k, batch, rate, min(iterations, slots), slots))


def _memory_seconds(m: int, n: int, k: int, batch: int, rate: Rate, ctas: float,
                    slots: int, saturation: float | None = None) -> float:
    """The unique bytes of A, B and C over the bandwidth ``ctas`` CTAs at a time can draw
    (``saturation``, default ``rate.saturation``, / ``slots`` of it each)."""
    moved = (m * k + n * k) * batch * rate.in_bytes + m * n * batch * rate.out_bytes
    saturation = rate.saturation if saturation is None else saturation
    return moved / (BANDWIDTH * min(1.0, saturation * ctas / slots))


def split_choices(m: int, n: int, k: int, batch: int, tile_k: int, rate: Rate,
                  max_splits: int = MAX_SPLITS, min_splits: int = 1,
                  tiles: int | None = None, num_sms: int = 0) -> range:
    """The split counts worth trying: each split keeps at least ``rate.min_k_tiles`` K-tiles, and
    the partial sums stay within 32-bit element counts; at least ``min_splits`` where that fits
    (a family's accuracy bound on the K-tiles one split sums in sequence).  With the product's
    output ``tiles`` (times the batch) and ``num_sms`` given, and ``max_splits`` the default
    ``MAX_SPLITS`` (a caller's own cap, such as an unsplit route's 1, stands), deep splits where
    ``max_splits`` of them leave SMs idle (``DEEP_SPLITS``, or up to ``rate.deep_ctas_per_sm``
    CTAs per SM: ``DEEP_CTAS_PER_SM``)."""
    k_tiles = -(-k // tile_k)
    most = min(max_splits, max(1, k_tiles // rate.min_k_tiles))
    if max_splits == MAX_SPLITS and tiles is not None and tiles * max_splits < num_sms:
        cap = max(DEEP_SPLITS, rate.deep_ctas_per_sm * num_sms // tiles)
        deep = min(cap, k_tiles // max(rate.min_k_tiles, rate.deep_k_tiles))
        most = max(most, deep)
    most = min(most, rate.max_splits)
    while most > 1 and (m * n * batch * most > _INT32_MAX or batch * most > _INT32_MAX):
        most -= 1
    return range(min(max(1, min_splits), most), most + 1)


def ranked(m: int, n: int, k: int, batch: int, num_sms: int, tile_k: int, tiles: dict,
           max_splits: int = MAX_SPLITS, workspace: bool = False,
           min_splits: int = 1) -> list[tuple[float, int, int, tuple]]:
    """Every (estimated seconds, splits, tile order, tile) candidate, least first; arguments as
    in ``best``."""
    batch = max(batch, 1)
    scored = []
    for order, (tile, (eff, rate)) in enumerate(tiles.items()):
        tm, tn = tile[:2]
        count = launched_tiles(m, n, batch, tm, tn, rate)
        for s in split_choices(m, n, k, batch, tile_k, rate, max_splits, min_splits, count,
                               num_sms):
            t = estimate(m, n, k, batch, num_sms, tm, tn, tile_k, s, eff, rate, workspace)
            scored.append((t, s, order, tile))
    return sorted(scored)


def best(m: int, n: int, k: int, batch: int, num_sms: int, tile_k: int, tiles: dict,
         max_splits: int = MAX_SPLITS, workspace: bool = False,
         min_splits: int = 1) -> tuple[tuple, int]:
    """(tile, splits) of least estimated time; ``tiles`` maps (tile_m, tile_n, ...) to
    (efficiency, Rate), best first (a family may key a kernel variant of the same tile shape
    by more fields, which this module passes through).  Estimates within ``TOLERANCE`` of the least
    count as equal (the model is coarse): of those, the fewest splits win, then the tile that
    computes the least padding, then the earlier one.  ``workspace`` as in ``estimate``,
    ``min_splits`` as in ``split_choices``."""
    scored = ranked(m, n, k, batch, num_sms, tile_k, tiles, max_splits, workspace, min_splits)
    least = scored[0][0]

    def padded(tile):
        return -(-m // tile[0]) * tile[0] * -(-n // tile[1]) * tile[1]

    near = [((s, padded(tile), order), tile, s)
            for t, s, order, tile in scored if t <= least * (1 + TOLERANCE)]
    _, tile, s = min(near)
    return tile, s
