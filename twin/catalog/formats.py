"""Number formats: bytes per value and which tensor-engine peak a model in that format runs at.

A chip's catalogue entry lists its dense peak per format (``flops: {bf16: ..., fp8: ...}``). A
model's weights are stored in its format (bytes per parameter below, block scales included) and
its matrix multiplications run at the chip's peak for that format; a format the chip lacks runs
at the peak of the nearest format of the same width it has, else of the next wider one (FP8
weights on an A100 are up-converted and multiplied in BF16; MXFP4 on an H100 in FP8).
"""

from __future__ import annotations

from typing import NamedTuple


class NumberFormat(NamedTuple):
    """A number format: storage per value and the width class of its tensor-engine path."""

    bytes_per_value: float  # [B], including the shared block scale of micro-scaled formats
    width: int  # element width [bit] (the compute class)
    source: str


#: Registry of number formats (name → format). Adding one = one line here.
FORMATS: dict[str, NumberFormat] = {
    "fp32": NumberFormat(4.0, 32, "IEEE 754 binary32"),
    "bf16": NumberFormat(2.0, 16, "bfloat16: 1-8-7 bits"),
    "fp16": NumberFormat(2.0, 16, "IEEE 754 binary16"),
    "fp8": NumberFormat(1.0, 8, "OCP 8-bit floating point (E4M3/E5M2), per-tensor scale"),
    "int8": NumberFormat(1.0, 8, "8-bit integer, per-channel scale"),
    "mxfp8": NumberFormat(1.0 + 1.0 / 32, 8,
                          "OCP Microscaling Formats (MX) v1.0: FP8 elements, one 8-bit E8M0 scale per block of 32"),
    "mxfp4": NumberFormat(0.5 + 1.0 / 32, 4,
                          "OCP Microscaling Formats (MX) v1.0: FP4 (E2M1) elements, one 8-bit E8M0 scale per block of 32"),
    "nvfp4": NumberFormat(0.5 + 1.0 / 16, 4,
                          "NVIDIA NVFP4: FP4 (E2M1) elements, one FP8 (E4M3) scale per block of 16"),
    "fp4": NumberFormat(0.5 + 1.0 / 16, 4, "4-bit floating point with block scales (as NVFP4)"),
}


def bytes_per_param(fmt: str) -> float:
    """Storage per parameter of a model in format ``fmt`` [B]."""
    return FORMATS[fmt].bytes_per_value


def compute_format(fmt: str, available) -> str | None:
    """The format whose peak a model in ``fmt`` runs at on a chip offering ``available`` formats.

    The model's own format if the chip has it; else one of the same width (MXFP8 for FP8 on
    Trainium3); else the narrowest wider one the chip has. None if the chip has none.
    """
    have = list(available)
    if fmt in have:
        return fmt
    width = FORMATS[fmt].width
    same = [f for f in have if f in FORMATS and FORMATS[f].width == width]
    if same:
        return same[0]
    wider = sorted((FORMATS[f].width, f) for f in have if f in FORMATS and FORMATS[f].width > width)
    return wider[0][1] if wider else None
