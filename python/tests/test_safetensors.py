"""safetensors reading and writing: every dtype, metadata, files monokda writes and reads, and
malformed files named, never trusted."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

from monokda import safetensors


def header_file(path, header, data=b""):
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)
    return path


def test_round_trip_every_dtype_and_metadata(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {
        "bf16": rng.integers(0, 1 << 16, (3, 5)).astype(np.uint16),
        "f16": rng.standard_normal(7).astype(np.float16),
        "f32": rng.standard_normal((2, 2, 2)).astype(np.float32),
        "f64": rng.standard_normal(4),
        "i8": rng.integers(-128, 127, 9).astype(np.int8),
        "i16": rng.integers(-1000, 1000, 3).astype(np.int16),
        "i32": rng.integers(-5, 5, (4, 3)).astype(np.int32),
        "i64": rng.integers(-(1 << 40), 1 << 40, 2),
        "u8": rng.integers(0, 255, 6).astype(np.uint8),
        "u32": rng.integers(0, 1 << 31, 2).astype(np.uint32),
        "u64": np.array([1 << 63], dtype=np.uint64),
        "bool": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    md = {"R": "2", "note": "ünïcode ok"}
    p = tmp_path / "all.safetensors"
    safetensors.save(p, tensors, md)
    got, got_md = safetensors.load(p)
    assert got_md == md
    assert set(got) == set(tensors)
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v), k
    header = json.loads(p.read_bytes()[8:8 + struct.unpack("<Q", p.read_bytes()[:8])[0]])
    assert header["bf16"]["dtype"] == "BF16"  # uint16 is written as BF16
    assert (8 + struct.unpack("<Q", p.read_bytes()[:8])[0]) % 8 == 0  # data section 8-byte aligned


def test_reads_what_monokda_writes_and_monokda_reads_what_it_writes(tmp_path, fixtures, monokda_bin):
    fx = fixtures(config="small", R=3, L=2, nb=5, block_write=True, layout="ds", null_requests=1, seed=4)
    tensors, md = safetensors.load(fx)
    assert tensors["prefix"].dtype == np.uint16 and tensors["prefix"].shape == (6, 256)
    assert tensors["conv_w"].dtype == np.float32 and tensors["state_indices"].dtype == np.int32
    assert md["conv_layout"] == "ds" and md["block_write"] == "1"
    # rewritten by Python (another header layout, same tensors), monokda computes the same step
    copy = tmp_path / "copy.safetensors"
    safetensors.save(copy, tensors, md)
    outs = []
    for src in (fx, copy):
        out = tmp_path / f"out-{src.name}"
        subprocess.run([monokda_bin, "reference", str(src), "-o", str(out)], check=True, capture_output=True)
        outs.append(safetensors.load(out)[0])
    for name in outs[0]:
        assert np.array_equal(outs[0][name], outs[1][name]), name


@pytest.mark.parametrize("make,message", [
    (lambda p: p.write_bytes(b"\x01\x02"), "truncated"),
    (lambda p: p.write_bytes(struct.pack("<Q", 1000) + b"{}"), "runs past the end"),
    (lambda p: p.write_bytes(struct.pack("<Q", 3) + b"{x}"), "not JSON"),
    (lambda p: header_file(p, [1, 2]), "not a JSON object"),
    (lambda p: header_file(p, {"a": {"dtype": "Q8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"), "unsupported dtype"),
    (lambda p: header_file(p, {"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4), "shape"),
    (lambda p: header_file(p, {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 4), "outside the data"),
    (lambda p: header_file(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 8), "needs 8"),
    (lambda p: header_file(p, {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                               "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}, b"\0" * 8), "overlap"),
    (lambda p: header_file(p, {"__metadata__": {"R": 2}}), "__metadata__"),
])
def test_malformed_files_are_named(tmp_path, make, message):
    p = tmp_path / "bad.safetensors"
    make(p)
    with pytest.raises(ValueError, match=message):
        safetensors.load(p)


def test_a_failed_write_leaves_no_file(tmp_path):
    p = tmp_path / "out.safetensors"
    with pytest.raises(ValueError, match="complex64"):
        safetensors.save(p, {"ok": np.zeros(2, np.float32), "bad": np.zeros(2, np.complex64)})
    with pytest.raises(ValueError, match="metadata"):
        safetensors.save(p, {"ok": np.zeros(2, np.float32)}, {"R": 2})
    assert os.listdir(tmp_path) == []


def test_torch_tensors_in_and_out(tmp_path):
    torch = pytest.importorskip("torch")
    p = tmp_path / "t.safetensors"
    x = torch.randn(3, 4)
    safetensors.save(p, {"b": x.to(torch.bfloat16), "f": x, "i": torch.arange(5, dtype=torch.int64)})
    arrays, _ = safetensors.load(p)
    assert arrays["b"].dtype == np.uint16 and arrays["i"].dtype == np.int64
    got, _ = safetensors.load(p, torch=True)
    assert got["b"].dtype == torch.bfloat16 and torch.equal(got["b"], x.to(torch.bfloat16))
    assert torch.equal(got["f"], x)
