"""bf16 as numpy uint16 bit patterns (the storage type of every SPEC hand-off), and torch.bfloat16.

numpy has no bfloat16 dtype, so a bf16 tensor is held as its raw bits in a uint16 array; these
helpers convert to and from float32 exactly as monokda does in C++ (round to nearest, ties to even;
NaN stays NaN, quietened, sign kept; overflow goes to Inf).
"""
import numpy as np


def to_f32(bits):
    """float32 values of bf16 bits (any shape; exact)."""
    bits = np.asarray(bits)
    if bits.dtype != np.uint16:
        raise TypeError(f"bf16 bits must be uint16, got {bits.dtype}")
    return (bits.astype(np.uint32) << 16).view(np.float32)


def from_f32(values):
    """bf16 bits of float32 values, rounded to nearest, ties to even (one rounding)."""
    values = np.asarray(values)
    if values.dtype != np.float32:
        raise TypeError(f"bf16 rounding takes float32, got {values.dtype} (round to float32 first, on purpose)")
    u = np.ascontiguousarray(values).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        rounded[nan] = ((u[nan] >> 16) | np.uint32(0x0040)).astype(np.uint16)
    return rounded


def round_f32(values):
    """float32 values rounded to the nearest bf16 and back: one of the SPEC's roundings."""
    return to_f32(from_f32(values))


def _torch():
    import torch  # optional: only the torch helpers need it

    return torch


def to_torch(bits):
    """A torch.bfloat16 tensor holding the same bits (no rounding)."""
    torch = _torch()
    bits = np.ascontiguousarray(bits)
    if bits.dtype != np.uint16:
        raise TypeError(f"bf16 bits must be uint16, got {bits.dtype}")
    return torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)


def from_torch(tensor):
    """uint16 bits of a torch.bfloat16 tensor (no rounding)."""
    torch = _torch()
    if tensor.dtype != torch.bfloat16:
        raise TypeError(f"expected a torch.bfloat16 tensor, got {tensor.dtype}")
    return tensor.detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)
