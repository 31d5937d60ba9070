"""bf16 bits <-> float32: exact widening, one round-to-nearest-even narrowing, NaN and overflow as
monokda's C++ (core/bf16.hpp) does them."""
import numpy as np
import pytest

from monokda import bf16


def f32_bits(u):
    return np.array(u, dtype=np.uint32).view(np.float32)


def test_every_bf16_survives_the_round_trip():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    back = bf16.from_f32(bf16.to_f32(bits))
    nan = (bits & 0x7FFF) > 0x7F80
    assert np.array_equal(back[~nan], bits[~nan])
    # NaN stays NaN, quietened, sign kept
    assert np.array_equal(back[nan], bits[nan] | 0x0040)


@pytest.mark.parametrize("f32,want", [
    (0x3F808000, 0x3F80),  # a tie rounds to the even neighbour below
    (0x3F818000, 0x3F82),  # a tie rounds to the even neighbour above
    (0x3F808001, 0x3F81),  # just above a tie rounds up
    (0x3F807FFF, 0x3F80),  # just below rounds down
    (0xBF818000, 0xBF82),  # negative ties likewise
    (0x7F7FFFFF, 0x7F80),  # FLT_MAX overflows to +Inf
    (0xFF7FFFFF, 0xFF80),  # and -FLT_MAX to -Inf
    (0x80000000, 0x8000),  # -0 stays -0
    (0x00008000, 0x0000),  # the smallest tie among subnormals goes to zero (even)
    (0x00018000, 0x0002),
    (0x7F800001, 0x7FC0),  # a signalling NaN comes back quiet
    (0xFF800001, 0xFFC0),
])
def test_round_to_nearest_even(f32, want):
    assert int(bf16.from_f32(f32_bits([f32]))[0]) == want


def test_rounding_takes_float32_only():
    with pytest.raises(TypeError):
        bf16.from_f32(np.zeros(3, dtype=np.float64))
    with pytest.raises(TypeError):
        bf16.to_f32(np.zeros(3, dtype=np.int16))


def test_round_f32_is_one_rounding():
    x = np.array([1.00390625, 1.005859375, -3.0e38], dtype=np.float32)  # halfway, above halfway, overflow-safe
    assert np.array_equal(bf16.round_f32(x), bf16.to_f32(bf16.from_f32(x)))
    assert bf16.round_f32(x)[0] == np.float32(1.0)
    assert bf16.round_f32(x)[1] == np.float32(1.0078125)


def test_torch_bfloat16_holds_the_same_bits():
    torch = pytest.importorskip("torch")
    bits = np.array([0x3F80, 0xC0A0, 0x0001, 0x7F80, 0x8000], dtype=np.uint16)
    t = bf16.to_torch(bits)
    assert t.dtype == torch.bfloat16
    assert np.array_equal(t.float().numpy(), bf16.to_f32(bits))
    assert np.array_equal(bf16.from_torch(t), bits)
    # torch's own rounding agrees with ours on every float32 of a sweep
    x = np.random.default_rng(1).standard_normal(4096).astype(np.float32) * np.float32(1e3)
    assert np.array_equal(bf16.from_torch(torch.from_numpy(x).to(torch.bfloat16)), bf16.from_f32(x))
