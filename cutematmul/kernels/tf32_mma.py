"""The TF32 warpgroup MMA atom (``wgmma.mma_async ... .f32.tf32.tf32``) for the sm90 kernel.

The 4.8.1 DSL wheel exposes F16/BF16, F8 and I8 warpgroup MMAs but no TF32 one, although its MLIR
atom type (``MmaAtomSM90Type``) takes TF32 operand types.  ``MmaTF32Op`` is a subclass of the
DSL's own warpgroup ``MmaOp`` that fills in what TF32 differs in: operand type TFloat32, an
instruction K of 8, and both operands K-major (PTX allows no transposed TF32 operand in shared
memory).  A may instead come from registers (``OperandSource.RMEM``): the kernel then loads it
from an M-major shared tile itself, which is how an operand stored M-major reaches TF32 wgmma
without a transposing copy.  Nothing of the DSL is patched.  ``tiled_mma`` builds the tiled MMA
the kernel uses, as ``sm90_utils.make_trivial_tiled_mma`` does for 16-bit types.

Imports: the CuTe DSL only.
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import cute_nvgpu as _nvgpu_ir
from cutlass.cute.atom import make_atom
from cutlass.cute.core import _pack_shape
from cutlass.cute.nvgpu import OperandMajorMode
from cutlass.cute.nvgpu.warpgroup import OperandSource
from cutlass.cute.nvgpu.warpgroup.mma import MmaF16BF16Trait, MmaOp

INSTRUCTION_K = 8


@dataclass(frozen=True)
class MmaTF32Op(MmaOp):
    """wgmma with TF32 operands, fp32 accumulators: B K-major in shared memory, A K-major in
    shared memory or (``a_in_registers``) in registers."""

    descriptive_name = "warpgroup TF32 MMA Operation"

    def __init__(self, tile_n: int, a_in_registers: bool = False):
        super().__init__(cutlass.TFloat32, cutlass.TFloat32, cutlass.Float32,
                         (64, tile_n, INSTRUCTION_K),
                         OperandSource.RMEM if a_in_registers else OperandSource.SMEM,
                         OperandMajorMode.K, OperandMajorMode.K)

    def _make_trait(self, *, loc=None, ip=None, **kwargs):
        shape = _pack_shape(self.shape_mnk, loc=loc, ip=ip)
        atom_type = _nvgpu_ir.MmaAtomSM90Type.get(
            shape.type.attribute, self.a_major_mode._to_ir(), self.b_major_mode._to_ir(),
            self.a_dtype.mlir_type, self.b_dtype.mlir_type, self.acc_dtype.mlir_type,
            self.a_src._to_ir(),
        )
        # The trait class only carries the ACCUMULATE field, which TF32 shares with F16/BF16.
        return MmaF16BF16Trait(
            make_atom(atom_type, [cutlass.Boolean(False).ir_value(loc=loc, ip=ip)], loc=loc, ip=ip)
        )


def tiled_mma(warpgroups: int, tile_n: int, a_in_registers: bool = False) -> cute.TiledMma:
    """``warpgroups`` x 1 warpgroups of TF32 wgmma covering (64 * warpgroups) x tile_n."""
    return cute.make_tiled_mma(cute.make_mma_atom(MmaTF32Op(tile_n, a_in_registers)),
                               cute.make_layout((warpgroups, 1, 1)))
