"""safetensors files with numpy (torch optional): an 8-byte little-endian header length, a JSON
header, raw little-endian data; string metadata under "__metadata__".

BF16 tensors are read as numpy uint16 arrays of their bits (see monokda.bf16); a uint16 array is
written as BF16, since monokda's files hold no U16 tensors. With torch=True, BF16 tensors come back
as torch.bfloat16 and every other dtype as the matching torch dtype; torch tensors are accepted on
writing. The reader checks every length, offset and shape before it uses a byte and raises
ValueError naming the problem.
"""
import json
import os
import struct
import tempfile

import numpy as np

# safetensors dtype name -> numpy dtype (BF16: its bits, as uint16)
_NUMPY = {
    "BF16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I8": np.dtype("i1"),
    "I16": np.dtype("<i2"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
    "U8": np.dtype("u1"),
    "U32": np.dtype("<u4"),
    "U64": np.dtype("<u8"),
    "BOOL": np.dtype("?"),
}
# numpy dtype -> safetensors dtype name, for writing (uint16 is BF16)
_NAME = {np.dtype(v).newbyteorder("="): k for k, v in _NUMPY.items()}

_MAX_HEADER = 100 << 20  # a header larger than this is not a header


def _fail(path, msg):
    raise ValueError(f"{path}: {msg}")


def _check_metadata(md, where):
    if md is None:
        return {}
    if not isinstance(md, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in md.items()):
        raise ValueError(f"{where}: metadata must be a dict of strings to strings")
    return dict(md)


def load(path, torch=False):
    """(tensors, metadata) of a safetensors file: a dict name -> array (numpy; torch with torch=True)
    and a dict of metadata strings."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        _fail(path, f"truncated: {len(data)} bytes, no header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or 8 + n > len(data):
        _fail(path, f"header length {n} runs past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        _fail(path, f"header is not JSON: {e}")
    if not isinstance(header, dict):
        _fail(path, "header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        _fail(path, "__metadata__ must be an object of strings")
    body = memoryview(data)[8 + n:]
    tensors, spans = {}, []
    for name, entry in header.items():
        if not isinstance(entry, dict):
            _fail(path, f"tensor '{name}': entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype not in _NUMPY:
            _fail(path, f"tensor '{name}': unsupported dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            _fail(path, f"tensor '{name}': shape {shape!r} is not a list of non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
            _fail(path, f"tensor '{name}': data_offsets {offsets!r} is not [begin, end]")
        begin, end = offsets
        if not 0 <= begin <= end <= len(body):
            _fail(path, f"tensor '{name}': data_offsets [{begin}, {end}] outside the data section ({len(body)} bytes)")
        dt = _NUMPY[dtype]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if end - begin != count * dt.itemsize:
            _fail(path, f"tensor '{name}': {end - begin} bytes for {dtype} {shape} (needs {count * dt.itemsize})")
        spans.append((begin, end, name))
        arr = np.frombuffer(body[begin:end], dtype=dt).reshape(shape).copy()
        tensors[name] = arr.astype(dt.newbyteorder("="), copy=False)
        if torch:
            tensors[name] = _to_torch(tensors[name], dtype)
    spans.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            _fail(path, f"tensors '{n0}' and '{n1}' overlap")
    return tensors, dict(metadata)


def save(path, tensors, metadata=None):
    """Writes tensors (name -> numpy array or torch tensor) and metadata strings to path, through a
    temporary file in the same folder renamed at the end, so a failed write leaves no partial file."""
    metadata = _check_metadata(metadata, path)
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        if name == "__metadata__":
            raise ValueError(f"{path}: '__metadata__' is not a tensor name")
        dtype, arr = _as_numpy(name, tensors[name])
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # the data section starts 8-byte aligned
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(blob)))
            f.write(blob)
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _as_numpy(name, value):
    """(safetensors dtype, numpy array) of a numpy array or torch tensor."""
    if type(value).__module__.startswith("torch"):
        import torch

        if value.dtype == torch.bfloat16:
            from monokda import bf16

            return "BF16", bf16.from_torch(value)
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    key = arr.dtype.newbyteorder("=")
    if key not in _NAME:
        raise ValueError(f"tensor '{name}': numpy dtype {arr.dtype} has no safetensors dtype here")
    return _NAME[key], arr


def _to_torch(arr, dtype):
    import torch

    if dtype == "BF16":
        from monokda import bf16

        return bf16.to_torch(arr)
    return torch.from_numpy(arr)
