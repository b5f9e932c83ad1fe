"""A small PTX interpreter for CPU tests of kernels no GPU here can run.

It executes the PTX that the CuTe DSL builds for a kernel (``compile_gemm(...).__ptx__``), one
CTA at a time: every thread steps through the instructions on its own; the warp collectives
(``ldmatrix``, ``mma.sync``, ``shfl.sync.idx`` and ``.bfly``) execute when all 32 lanes of a
warp reach them, ``bar.sync`` when every thread of the CTA does.  It counts the global loads
at each offset of a region (``Region.loads``: which elements a kernel read, how often).  It
raises ``SimError`` on

* a global load, store or prefetch outside the ``Region``s it was given, or inside one but
  not on an element (``Region.valid``: row and batch padding; every element of a vector where
  the region knows its element size), a store outside a writable region, or one element of
  it stored twice (across the CTAs run);
* a shared-memory access outside the CTA's bytes or misaligned, a race (a byte written by one
  thread and read or written by another between two barriers), a misaligned ``ldmatrix`` row;
* a warp reaching a collective at different instructions, a deadlock, an instruction it does
  not model.

What it models: the integer, predicate, conversion and memory instructions (scalar and
vector loads and stores, global and shared, and ``cp.async`` with its groups) of the SIMT
family's row-streaming kernels (on FMA, ``kernels/simt_gemv.py``, on tensor cores,
``kernels/simt_gemv_mma.py``, and staged, ``kernels/simt_gemv_staged.py``) and of the
operand copy (``kernels/operand_prep.py``), the collectives above and a grid's x and y; fp32
add, sub and mul (computed in float64, rounded once: exact where the fp32 result is) and
``fma.rn`` (the product exact in float64, the sum rounded to float64, then to fp32: exact
where the fp32 result is), the exact conversions of fp16 and bf16 to fp32, the conversion to
TF32 (``cvt.rna``); ``mma.sync.m16n8k16`` with fp16 or bf16 inputs and fp32 accumulators,
computed in float64 and rounded to fp32 (exact for the small integers the tests feed it, so a
result compares exactly with a float64 reference).  What it does not: CTAs running concurrently
(they run one after another), memory ordering beyond barriers, timing.

It also lays out the tests' operands (``operand``: a Region of small integers with padded
lines and batches, and where each element lies), runs a row-streaming kernel's product CTA by
CTA (``row_streaming``) and rounds to the 16-bit types (``to_16``,
``from_16``) to compare a kernel's C with float64 products (``mismatches``).

Imports: nothing of ours (NumPy only).
"""

import re
import struct

import numpy as np

# The conversions between bits and floats go through ``struct`` (a few times faster than
# NumPy scalars, and the interpreter runs millions of them).
_U16, _U32, _F16, _F32 = (struct.Struct(f) for f in ("<H", "<I", "<e", "<f"))


def f16_to_f(b):
    return _F16.unpack(_U16.pack(b))[0]


def bf16_to_f(b):
    return _F32.unpack(_U32.pack(b << 16))[0]


def to_16(x, dtype: str) -> int:
    """The bits of ``x`` (an fp32 value) rounded to nearest even in ``dtype`` ("float16" or
    "bfloat16"), as ``cvt.rn`` does (a NaN becomes bf16's canonical NaN)."""
    if dtype == "float16":
        return int(np.array([np.float32(x)], np.float16).view(np.uint16)[0])
    if np.isnan(x):
        return 0x7FC0
    bits = f_to_bits32(np.float32(x))
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def from_16(bits: int, dtype: str) -> float:
    """The value of ``dtype`` ("float16" or "bfloat16") whose bits are ``bits``."""
    bits = int(bits)  # a NumPy uint16 would shift out of its width
    return f16_to_f(bits) if dtype == "float16" else bf16_to_f(bits)


def mismatches(got, offset: int, ldc: int, want, c_dtype: str, dtype: str) -> int:
    """How many of ``want``'s (M, N) float64 values the C in ``got`` (fp32 values, or the
    bits of 16-bit ones) does not hold at ``offset + row * ldc + column``: an fp32 C exactly
    the value rounded to fp32, a 16-bit C (``c_dtype`` not "float32": ``dtype``'s) the value
    rounded to it (``to_16``); NaN matches NaN."""
    wrong = 0
    for r in range(want.shape[0]):
        for c in range(want.shape[1]):
            value = got[offset + r * ldc + c]
            if c_dtype == "float32":
                expect = np.float32(want[r, c])
            else:
                value = from_16(value, dtype)
                expect = from_16(to_16(want[r, c], dtype), dtype)
            if not (value == expect or (np.isnan(value) and np.isnan(expect))):
                wrong += 1
    return wrong


def split_mismatches(got, full_a, full_b, splits: int, granule: int, c_stride: int, ldc: int,
                     c_dtype: str, dtype: str) -> int:
    """``mismatches`` of every partial product of a product split along K: A's (M, K, batch)
    values times B's (N, K, batch), K cut into ``splits`` runs of whole ``granule``s as the
    kernel cuts it (the last runs may be short or empty), each split's C at ``(entry * splits
    + split) * c_stride`` in ``got``.  The float64 reference sums every term, so an inf or NaN
    an operand holds reaches it as it reaches the kernel's sums."""
    k, batch = full_a.shape[1], full_a.shape[2]
    per_split = -(-(-(-k // granule)) // splits) * granule
    wrong = 0
    for entry in range(batch):
        for s in range(splits):
            lo, hi = s * per_split, min(k, (s + 1) * per_split)
            a = full_a[:, lo:hi, entry].astype(np.float64)
            b = full_b[:, lo:hi, entry].astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                want = (a[:, None, :] * b[None, :, :]).sum(axis=2)
            wrong += mismatches(got, (entry * splits + s) * c_stride, ldc, want, c_dtype, dtype)
    return wrong


def inf_at_k_end(values):
    """An ``operand`` poison: inf in the first row's (or column's) last K element."""
    values[0, -1, :] = np.inf


def nan_in_last_line(values):
    """An ``operand`` poison: NaN at K = 0 of the last row (or column)."""
    values[-1, 0, :] = np.nan


def f_to_bits32(f):
    """The bits of ``f``, an fp32 value (one that fp32 holds exactly: see ``round_to_f32``)."""
    return _U32.unpack(_F32.pack(f))[0]


def round_to_f32(x):
    """The bits of ``x`` (a float64) rounded to nearest even in fp32, inf past fp32's range."""
    try:
        return _U32.unpack(_F32.pack(x))[0]
    except OverflowError:  # finite, but past fp32's largest
        return 0x7F800000 | (0x80000000 if x < 0 else 0)


def bits32_to_f(b):
    return _F32.unpack(_U32.pack(b))[0]


class SimError(Exception):
    pass


def parse(ptx):
    body = ptx[ptx.index("{", ptx.index(".entry")) + 1: ptx.rindex("}")]
    body = re.sub(r"//[^\n]*", "", body)
    insts, labels = [], {}
    for stmt in body.split(";"):
        stmt = " ".join(stmt.split())
        while True:
            m = re.match(r"^(\$[\w]+):\s*(.*)$", stmt)
            if not m:
                break
            labels[m.group(1)] = len(insts)
            stmt = m.group(2)
        if not stmt or stmt.startswith(".reg"):
            continue
        pred = None
        m = re.match(r"^@(!?)(%p\d+) (.*)$", stmt)
        if m:
            pred = (m.group(1) == "!", m.group(2))
            stmt = m.group(3)
        op, _, rest = stmt.partition(" ")
        args = split_args(rest)
        insts.append((pred, op, args))
    return insts, labels


def _vector(arg, parts):
    """The registers of a vector operand ``{%r1, %r2, ...}`` (``.v2``/``.v4`` in ``parts``), or
    the one operand."""
    if "v2" in parts or "v4" in parts:
        return [x.strip() for x in arg.strip("{}").split(",")]
    return [arg]


def split_args(rest):
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def tensor_param(ptr: int, shape, strides) -> bytes:
    """A (rows, K, batch) tensor kernel parameter as the DSL passes it: the pointer, three int32
    extents, 4 bytes of padding, then its dynamic int64 strides (the static ones are left out)."""
    out = bytearray(24 + 8 * len(strides))
    out[0:8] = ptr.to_bytes(8, "little")
    for i, s in enumerate(shape):
        out[8 + 4 * i:12 + 4 * i] = int(s).to_bytes(4, "little", signed=True)
    for i, s in enumerate(strides):
        out[24 + 8 * i:32 + 8 * i] = int(s).to_bytes(8, "little", signed=True)
    return bytes(out)


class Region:
    """One global allocation at ``base`` of ``nbytes``: ``valid`` the byte offsets of its
    elements (None: every byte), ``writable`` whether the kernel may store into it;
    ``writes`` maps each stored offset to the CTA that stored it, ``loads`` each loaded offset
    (a vector's first byte) to the number of loads there (across the CTAs run)."""

    def __init__(self, name, base, nbytes, valid=None, writable=False, element=None):
        self.name, self.base, self.data = name, base, bytearray(nbytes)
        self.valid = valid
        #: With ``element`` (bytes), an access of several elements (a vector) must be on valid
        #: elements all through; without, only its first byte is checked.
        self.element = element
        self.writable = writable
        self.writes = {}
        self.loads = {}


#: Bytes per element of each input dtype ``operand`` lays out.
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def round_up(x: int, align: int) -> int:
    return -(-x // align) * align


def operand(name, base, rows, k, batch, rows_major, pad, shared, rng, dtype, align=1, at=0,
            poison=None):
    """(Region, values (rows, K, batch), its two strides, the element offset of (row, k,
    entry)) of a (rows, K, batch) operand of small integers in ``dtype``: unit stride along
    rows (``rows_major``) or K, lines of the length plus ``pad`` elements rounded up to
    ``align``, batch stride 0 (``shared``), its first element ``at`` elements past ``base``;
    ``poison`` edits the values first.  Every element of a vector load must lie on one of its
    elements (``Region.element``)."""
    size = ELEMENT_BYTES[dtype]
    ld = round_up((rows if rows_major else k) + pad, align)
    matrix = (k if rows_major else rows) * ld
    batch_stride = 0 if shared else round_up(matrix + 3, align)

    def offset(r, kk, entry):
        return (r + kk * ld if rows_major else r * ld + kk) + entry * batch_stride

    stored = 1 if shared else batch
    values = rng.integers(-2, 3, size=(rows, k, stored)).astype(np.float32)
    if poison is not None:
        poison(values)
    count = offset(rows - 1, k - 1, stored - 1) + 1
    flat = np.zeros(count, np.float32)
    valid = set()
    for entry in range(stored):
        for r in range(rows):
            for kk in range(k):
                flat[offset(r, kk, entry)] = values[r, kk, entry]
                valid.add(size * offset(r, kk, entry))
    if dtype == "float32":
        raw = flat
    elif dtype == "float16":
        raw = flat.astype(np.float16)
    else:  # bf16: the top half of fp32 (small integers and inf/NaN are exact)
        raw = (flat.view(np.uint32) >> 16).astype(np.uint16)
    region = Region(name, base + size * at, size * count, valid, element=size)
    region.data[:] = raw.tobytes()
    full = np.repeat(values, batch, axis=2) if shared else values
    return region, full, (ld, batch_stride), offset


def row_streaming(ptx, a, b, m, n, k, batch, splits, rows, cols, threads, smem, dtype,
                  c_dtype, granule, align_c=1, pad_c=0):
    """Every CTA of one product of a row-streaming kernel (``kernels/simt_gemv*.py``: one CTA
    per ``rows`` x ``cols`` tile of C and matrix of C, the entry's (A, B, C, column tiles)
    parameters) over ``operand``'s (region, values, strides) of A and B, ``threads`` threads and
    ``smem`` bytes of shared memory per CTA; C of ``c_dtype`` laid out here, its lines of N plus
    ``pad_c`` elements and its matrices (``splits`` per batch entry, K cut in whole
    ``granule``s) rounded up to ``align_c`` elements.  Returns (the Sim, the number of outputs
    wrong or missing)."""
    (reg_a, full_a, st_a), (reg_b, full_b, st_b) = a, b
    ldc = round_up(n + pad_c, align_c)
    c_stride = round_up(m * ldc + 5, align_c)
    size = ELEMENT_BYTES[c_dtype]
    count = (batch * splits - 1) * c_stride + (m - 1) * ldc + n
    reg_c = Region("C", 0x30000000, size * count, writable=True, element=size,
                   valid={size * (e * c_stride + r * ldc + c) for e in range(batch * splits)
                          for r in range(m) for c in range(n)})
    tiles_n = -(-n // cols)
    params = {0: tensor_param(reg_a.base, (m, k, batch), st_a),
              1: tensor_param(reg_b.base, (n, k, batch), st_b),
              2: tensor_param(reg_c.base, (m, n, batch * splits), (ldc, c_stride)),
              3: tiles_n.to_bytes(4, "little")}
    sim = Sim(ptx, params, [reg_a, reg_b, reg_c], smem, threads=threads,
              dtype="bf16" if dtype == "bfloat16" else "f16")
    for cta in range(-(-m // rows) * tiles_n * batch * splits):
        sim.run_cta(cta)
    got = np.frombuffer(bytes(reg_c.data), np.float32 if c_dtype == "float32" else np.uint16)
    return sim, len(reg_c.valid) - len(reg_c.writes) + split_mismatches(
        got, full_a, full_b, splits, granule, c_stride, ldc, c_dtype, dtype)


class Sim:
    """The kernel of ``ptx`` with its parameters (``params``: index -> bytes, as the launch
    passes them), global ``regions``, ``smem_bytes`` of shared memory per CTA, ``threads``
    per CTA and the 16-bit input type (``dtype``: "f16" or "bf16")."""

    def __init__(self, ptx, params, regions, smem_bytes, threads=256, dtype="f16"):
        self.insts, self.labels = parse(ptx)
        # What each instruction is to ``step_thread``: 0 executed, 1 a collective, 2 ret, 3 a
        # branch.
        self.kinds = [1 if op.startswith(self.COLLECTIVE) else 2 if op == "ret"
                      else 3 if op.startswith("bra") else 0 for _, op, _ in self.insts]
        self.params = params  # param index -> bytes
        self.regions = regions
        self.smem_bytes = smem_bytes
        self.threads = threads
        self.to_f = f16_to_f if dtype == "f16" else bf16_to_f
        self.prefetches = {}  # region name -> prefetches into it
        self.decoded, self.addresses = {}, {}  # opcode / address operand -> its parts

    # ------------------------------------------------------------ memory
    def region_of(self, addr, size, kind):
        for r in self.regions:
            if r.base <= addr and addr + size <= r.base + len(r.data):
                off = addr - r.base
                if r.valid is not None and kind != "prefetch":
                    for at in range(off, off + size, r.element or size):
                        if at not in r.valid:
                            raise SimError(f"{kind} at {r.name}+{at}: inside the allocation "
                                           "but not on an element")
                return r, off
        raise SimError(f"{kind} out of bounds: addr {addr:#x} size {size}")

    def gload(self, addr, size):
        if addr % size:
            raise SimError("misaligned global load")
        r, off = self.region_of(addr, size, "load")
        r.loads[off] = r.loads.get(off, 0) + 1
        return int.from_bytes(r.data[off:off + size], "little")

    def gstore(self, addr, size, val, tid):
        if addr % size:
            raise SimError("misaligned global store")
        r, off = self.region_of(addr, size, "store")
        if not r.writable:
            raise SimError(f"store into {r.name}, which is read-only")
        if off in r.writes:
            raise SimError(f"double store at C+{off} (ctas {r.writes[off]} and {self.ctaid})")
        r.writes[off] = self.ctaid
        r.data[off:off + size] = (val & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def sacc(self, addr, size, tid, write):
        if addr < 0 or addr + size > self.smem_bytes or addr % size:
            raise SimError(f"shared access out of bounds/misaligned: {addr} size {size}")
        for b in range(addr, addr + size, 2):
            w, rds = self.epoch.get(b, (None, set()))
            if write:
                if (w is not None and w != tid) or (rds - {tid}):
                    raise SimError(f"shared race: write by {tid} at {b}, writer {w}, "
                                   f"readers {sorted(rds)[:4]}")
                self.epoch[b] = (tid, rds)
            else:
                if w is not None and (isinstance(tid, tuple) or w != tid):
                    raise SimError("shared race: read by "
                                   f"{tid if not isinstance(tid, tuple) else 'warp'} at {b} "
                                   f"written by {w} in the same epoch")
                rds = set(rds)
                rds.update(tid if isinstance(tid, tuple) else (tid,))
                self.epoch[b] = (w, rds)

    def cp_async(self, t, R, parts, args):
        """``cp.async`` of 4 to 16 bytes, ``commit_group`` and ``wait_group`` / ``wait_all``.
        A copy reads global memory when it is issued (only its source byte count, the rest of
        its shared bytes zero-filled; a count of 0 reads nothing, but its address must still
        lie on an element) and lands in shared memory when a wait completes its group; its
        shared bytes count as written by the thread at both points (a race with another
        thread's access in either epoch is reported)."""
        groups = self.cp_groups.setdefault(t, [[]])  # committed groups, then the open one
        what = parts[2]
        if what == "commit_group":
            groups.append([])
            return
        if what in ("wait_group", "wait_all"):
            keep = int(args[0]) if what == "wait_group" else 0
            while len(groups) - 1 > keep:
                for dst, data in groups.pop(0):
                    self.sacc(dst, len(data), t, True)
                    self.smem[dst:dst + len(data)] = data
            return
        dbase, doff = self.addr(R, args[0])
        sbase, soff = self.addr(R, args[1])
        dst, src = R[dbase] + doff, R[sbase] + soff
        size = int(args[2], 0)
        count = (R[args[3]] if args[3][0] == "%" else int(args[3], 0)) if len(args) > 3 else size
        if size not in (4, 8, 16) or not 0 <= count <= size or count % 4:
            raise SimError(f"cp.async of {size} bytes reading {count}")
        if src % size:
            raise SimError("misaligned cp.async source")
        if count == 0:
            self.region_of(src, 4, "cp.async")
        data = bytearray(size)
        for at in range(0, count, 4):
            data[at:at + 4] = self.gload(src + at, 4).to_bytes(4, "little")
        self.sacc(dst, size, t, True)
        groups[-1].append((dst, bytes(data)))

    # ------------------------------------------------------------ run one CTA
    def run_cta(self, ctaid, ctaid_y=0, grid=(1, 1)):
        """CTA (``ctaid``, ``ctaid_y``) of a grid of ``grid`` (x, y) CTAs (the y and the grid
        matter only to a kernel that reads them)."""
        self.ctaid = ctaid
        self.smem = bytearray(self.smem_bytes)
        self.epoch = {}
        self.cp_groups = {}  # thread -> its cp.async groups (``cp_async``)
        T = self.threads
        regs = [dict() for _ in range(T)]
        pc = [0] * T
        state = ["run"] * T  # run / wait / done
        insts, labels = self.insts, self.labels
        for t in range(T):
            regs[t]["%tid.x"] = t
            regs[t]["%ctaid.x"] = ctaid
            regs[t]["%ctaid.y"], regs[t]["%ctaid.z"] = ctaid_y, 0
            regs[t]["%nctaid.x"], regs[t]["%nctaid.y"], regs[t]["%nctaid.z"] = (*grid, 1)
            regs[t]["%ntid.x"], regs[t]["%ntid.y"], regs[t]["%ntid.z"] = T, 1, 1
        while True:
            progressed = False
            for t in range(T):
                if state[t] != "run":
                    continue
                progressed = True
                self.step_thread(t, regs[t], pc, state, insts, labels)
            # collectives
            waiting = [t for t in range(T) if state[t] == "wait"]
            if not waiting:
                if all(s == "done" for s in state):
                    return
                if not progressed:
                    raise SimError("deadlock")
                continue
            released = False
            # barrier
            alive = [t for t in range(T) if state[t] != "done"]
            # (Threads may wait at different bar.sync instructions: all name barrier 0.)
            if (all(state[t] == "wait" for t in alive)
                    and {insts[pc[t]][1] for t in alive} == {"bar.sync"}):
                if len(alive) != T:
                    raise SimError("bar.sync with exited threads")
                self.epoch = {}
                for t in alive:
                    pc[t] += 1
                    state[t] = "run"
                continue
            for w in range(T // 32):
                lanes = list(range(32 * w, 32 * w + 32))
                if not all(state[t] == "wait" for t in lanes):
                    continue
                pcs = {pc[t] for t in lanes}
                if len(pcs) != 1:
                    if {insts[pc[t]][1] for t in lanes} == {"bar.sync"}:
                        continue
                    raise SimError(f"warp {w} diverged at collectives: {pcs}")
                p = pcs.pop()
                op = insts[p][1]
                if op == "bar.sync":
                    continue
                self.collective(insts[p], [regs[t] for t in lanes], lanes)
                for t in lanes:
                    pc[t] += 1
                    state[t] = "run"
                released = True
            if not released:
                bad = {(t // 32, insts[pc[t]][1]) for t in waiting}
                raise SimError(f"stuck: {sorted(bad)[:6]}")

    COLLECTIVE = ("ldmatrix", "mma.sync", "bar.sync", "shfl.sync")

    def step_thread(self, t, R, pc, state, insts, labels):
        kinds = self.kinds
        while True:
            p = pc[t]
            pred, op, args = insts[p]
            if pred is not None:
                v = R[pred[1]]
                if pred[0]:
                    v = not v
                if not v:
                    pc[t] = p + 1
                    continue
            kind = kinds[p]
            if kind == 1:
                state[t] = "wait"
                return
            if kind == 2:
                state[t] = "done"
                return
            if kind == 3:
                pc[t] = labels[args[0]]
                continue
            self.execute(t, R, op, args)
            pc[t] = p + 1

    def val(self, R, a, width=32):
        if a[0] == "%":
            return R[a]
        if a.startswith("0f"):
            return int(a[2:], 16)
        if a.startswith("0d"):
            return int(a[2:], 16)
        return int(a, 0) & ((1 << width) - 1)

    def addr(self, R, a):
        got = self.addresses.get(a)
        if got is None:
            m = re.match(r"^\[([%\w.]+)(?:\+(-?\d+))?\]$", a)
            got = self.addresses[a] = (m.group(1), int(m.group(2) or 0))
        return got

    WIDTHS = {"b16": 16, "u16": 16, "s16": 16, "b32": 32, "u32": 32, "s32": 32, "f32": 32,
              "b64": 64, "u64": 64, "s64": 64, "pred": 1, "f16": 16, "bf16": 16}

    def decode(self, op):
        """(parts, name, type, width, mask, signed) of opcode ``op`` (kept in ``decoded``)."""
        parts = op.split(".")
        width = self.WIDTHS.get(parts[-1], 32)
        got = self.decoded[op] = (parts, parts[0], parts[-1], width, (1 << width) - 1,
                                  parts[-1].startswith("s"))
        return got

    def execute(self, t, R, op, args):
        parts, name, typ, width, mask, signed = self.decoded.get(op) or self.decode(op)

        def sv(x):
            if not signed:
                return x & mask
            x &= mask
            return x - (1 << width) if x >> (width - 1) else x

        V = lambda a: R[a] if a[0] == "%" else self.val(R, a, width)
        # fp32 arithmetic first: most of what the FMA kernels execute.
        if op == "fma.rn.f32":
            # a * b is exact in float64 (24 + 24 bits); the sum is then rounded to float64 and
            # to fp32: exact where the fp32 result is (the small integers the tests feed it).
            R[args[0]] = round_to_f32(bits32_to_f(V(args[1])) * bits32_to_f(V(args[2]))
                                      + bits32_to_f(V(args[3])))
        elif typ == "f32" and name in ("add", "sub", "mul"):
            a, b = bits32_to_f(V(args[1])), bits32_to_f(V(args[2]))
            r = a + b if name == "add" else a - b if name == "sub" else a * b
            R[args[0]] = round_to_f32(r)  # computed in float64, rounded once
        elif name == "mov":
            src = args[1]
            if src == "__dynamic_shmem__0":
                R[args[0]] = 0
            elif src.startswith("{"):
                hs = [R[x.strip()] for x in src.strip("{}").split(",")]
                R[args[0]] = hs[0] | (hs[1] << 16)
            elif src in ("%tid.x", "%ctaid.x"):
                R[args[0]] = R[src]
            else:
                R[args[0]] = V(src)
        elif name == "ld" and parts[1] == "param":
            pm = re.match(r"^\[\w+_param_(\d+)(?:\+(\d+))?\]$", args[1])
            blob = self.params[int(pm.group(1))]
            off = int(pm.group(2) or 0)
            if parts[2] == "v2":
                outs = [x.strip() for x in args[0].strip("{}").split(",")]
                for i, o in enumerate(outs):
                    R[o] = int.from_bytes(blob[off + 4 * i: off + 4 * i + 4], "little")
            else:
                n = width // 8
                R[args[0]] = int.from_bytes(blob[off:off + n], "little")
        elif name == "ld" and parts[1] == "global":
            base, off = self.addr(R, args[1])
            outs = _vector(args[0], parts)
            n = width // 8
            if len(outs) > 1:  # a vector: one access of the whole vector's bytes
                whole = self.gload(R[base] + off, n * len(outs))
                for i, o in enumerate(outs):
                    R[o] = (whole >> (8 * n * i)) & mask
            else:
                R[args[0]] = self.gload(R[base] + off, n)
        elif name == "st" and parts[1] == "global":
            base, off = self.addr(R, args[0])
            vals = _vector(args[1], parts)
            n = width // 8
            whole = 0
            for i, x in enumerate(vals):
                whole |= (V(x) & mask) << (8 * n * i)
            self.gstore(R[base] + off, n * len(vals), whole, t)
        elif name == "ld" and parts[1] == "shared":
            base, off = self.addr(R, args[1])
            a = R[base] + off
            n = width // 8
            for i, o in enumerate(_vector(args[0], parts)):
                self.sacc(a + n * i, n, t, False)
                R[o] = int.from_bytes(self.smem[a + n * i: a + n * i + n], "little")
        elif name == "st" and parts[1] == "shared":
            base, off = self.addr(R, args[0])
            a = R[base] + off
            vals = ([x.strip() for x in args[1].strip("{}").split(",")] if parts[2].startswith("v")
                    else [args[1]])
            n = width // 8
            for i, x in enumerate(vals):
                self.sacc(a + n * i, n, t, True)
                self.smem[a + n * i: a + n * i + n] = (V(x) & mask).to_bytes(n, "little")
        elif name == "cp" and parts[1] == "async":
            self.cp_async(t, R, parts, args)
        elif name == "prefetch":
            base, off = self.addr(R, args[0])
            r, _ = self.region_of(R[base] + off, 1, "prefetch")
            self.prefetches[r.name] = self.prefetches.get(r.name, 0) + 1
        elif name == "griddepcontrol":
            pass
        elif name == "setp":
            cmp = parts[1]
            a, b = sv(V(args[1])), sv(V(args[2]))
            R[args[0]] = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
                          "ge": a >= b}[cmp]
        elif name == "selp":
            R[args[0]] = V(args[1]) if R[args[3]] else V(args[2])
        elif name in ("and", "or", "xor") and typ == "pred":
            a, b = R[args[1]], R[args[2]]
            R[args[0]] = {"and": a and b, "or": a or b, "xor": a != b}[name]
        elif name == "not":
            R[args[0]] = ~V(args[1]) & mask
        elif name == "neg":
            R[args[0]] = (-V(args[1])) & mask
        elif name == "cvt" and parts[1:] == ["rna", "tf32", "f32"]:
            # To TF32, nearest with ties away from zero: half an ulp of TF32 (bit 12) added to
            # the magnitude, the 13 low bits cleared; Inf and NaN kept.
            bits = R[args[1]] & 0xFFFFFFFF
            R[args[0]] = bits if (bits & 0x7F800000) == 0x7F800000 else (
                (bits + 0x1000) & 0xFFFFE000)
        elif name == "cvt":
            dt, st = parts[-2], parts[-1]
            if dt == "f32" and st == "bf16":  # exact: the bf16 bits are fp32's top half
                R[args[0]] = (R[args[1]] & 0xFFFF) << 16
            elif dt == "f32" and st == "f16":  # exact
                R[args[0]] = f_to_bits32(f16_to_f(R[args[1]] & 0xFFFF))
            elif parts[1] in ("rn", "rz", "rm", "rp"):
                dt, st = parts[2], parts[3]
                x = bits32_to_f(R[args[1]]) if st == "f32" else None
                if dt == "f16":
                    R[args[0]] = int(np.array([x], dtype=np.float16).view(np.uint16)[0])
                elif dt == "bf16":  # round to nearest even on the fp32 bits
                    bits = R[args[1]] & 0xFFFFFFFF
                    if (bits & 0x7FFFFFFF) > 0x7F800000:
                        R[args[0]] = 0x7FC0
                    else:
                        R[args[0]] = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
                else:
                    raise SimError("cvt " + op)
            else:
                sw = int(st[1:])
                x = R[args[1]] & ((1 << sw) - 1)
                if st[0] == "s" and x >> (sw - 1):
                    x -= 1 << sw
                R[args[0]] = x & ((1 << int(dt[1:])) - 1)
        else:
            a = sv(V(args[1]))
            b = sv(V(args[2])) if len(args) > 2 else None
            if name == "add":
                r = a + b
            elif name == "sub":
                r = a - b
            elif name == "mul":
                r = a * b
                if parts[1] == "wide":  # the full product, twice the width
                    R[args[0]] = r & ((1 << (2 * width)) - 1)
                    return
            elif name == "mad":
                r = a * b + sv(V(args[3]))
            elif name == "div":
                if b == 0:
                    raise SimError("division by zero")
                q = abs(a) // abs(b)
                r = q if (a >= 0) == (b >= 0) else -q
            elif name == "rem":
                r = a - b * int(a / b)
            elif name == "and":
                r = a & b
            elif name == "or":
                r = a | b
            elif name == "xor":
                r = a ^ b
            elif name == "shl":
                r = (V(args[1]) << V(args[2])) if V(args[2]) < width else 0
            elif name == "shr":
                sh = min(V(args[2]), width)
                r = (a >> sh) if signed else ((V(args[1]) & mask) >> sh)
            elif name == "min":
                r = min(a, b)
            elif name == "max":
                r = max(a, b)
            else:
                raise SimError("unknown op " + op)
            R[args[0]] = r & mask

    # ------------------------------------------------------------ warp collectives
    def collective(self, inst, Rs, lanes):
        _, op, args = inst
        if op.startswith("shfl.sync.idx"):
            src = int(args[2])
            v = Rs[src][args[1]]
            for R in Rs:
                R[args[0]] = v
        elif op.startswith("shfl.sync.bfly"):
            # Lane l reads lane l ^ b's value: every lane of the warp takes part (membermask
            # -1) and no lane falls outside it (clamp 31), the only form modelled.
            if (args[3], args[4]) != ("31", "-1"):
                raise SimError("shfl.sync.bfly with clamp/membermask " + ", ".join(args[3:]))
            d, a, b = args[:3]
            vs = [R[a] for R in Rs]
            if b[0] == "%":
                for l, R in enumerate(Rs):
                    R[d] = vs[l ^ (R[b] & 31)]
            else:
                b = int(b, 0) & 31
                for l, R in enumerate(Rs):
                    R[d] = vs[l ^ b]
        elif op.startswith("ldmatrix"):
            num = int(re.search(r"\.x(\d)", op).group(1))
            trans = ".trans" in op
            outs = [x.strip() for x in args[0].strip("{}").split(",")]
            addrs = []
            for R in Rs:
                base, off = self.addr(R, args[1])
                addrs.append(R[base] + off)
            for q in range(num):
                for r in range(8):
                    a = addrs[8 * q + r]
                    if a % 16:
                        raise SimError("ldmatrix row misaligned")
                    self.sacc(a, 16, tuple(lanes), False)
            for l, R in enumerate(Rs):
                for q in range(num):
                    if trans:
                        hs = []
                        for h in range(2):
                            a = addrs[8 * q + 2 * (l % 4) + h] + 2 * (l // 4)
                            hs.append(int.from_bytes(self.smem[a:a + 2], "little"))
                    else:
                        a = addrs[8 * q + l // 4] + 4 * (l % 4)
                        hs = [int.from_bytes(self.smem[a:a + 2], "little"),
                              int.from_bytes(self.smem[a + 2:a + 4], "little")]
                    R[outs[q]] = hs[0] | (hs[1] << 16)
        elif op.startswith("mma.sync"):
            d, a, b, c = ([x.strip() for x in g.strip("{}").split(",")] for g in args)
            A = np.zeros((16, 16)); B = np.zeros((16, 8)); C = np.zeros((16, 8))
            cv = lambda R, x: R[x] if x.startswith("%") else int(x[2:], 16)
            for l, R in enumerate(Rs):
                g, tq = l // 4, l % 4
                for j in range(4):
                    w = R[a[j]]
                    row = g + 8 * (j % 2)
                    k = 2 * tq + 8 * (j // 2)
                    A[row, k] = self.to_f(w & 0xFFFF)
                    A[row, k + 1] = self.to_f(w >> 16)
                for j in range(2):
                    w = R[b[j]]
                    k = 2 * tq + 8 * j
                    B[k, g] = self.to_f(w & 0xFFFF)
                    B[k + 1, g] = self.to_f(w >> 16)
                for j in range(4):
                    C[g + 8 * (j // 2), 2 * tq + (j % 2)] = bits32_to_f(cv(R, c[j]))
            with np.errstate(invalid="ignore", over="ignore"):
                D = (A.astype(np.float64) @ B.astype(np.float64) + C).astype(np.float32)
            for l, R in enumerate(Rs):
                g, tq = l // 4, l % 4
                for j in range(4):
                    R[d[j]] = f_to_bits32(D[g + 8 * (j // 2), 2 * tq + (j % 2)])
        else:
            raise SimError("collective " + op)
