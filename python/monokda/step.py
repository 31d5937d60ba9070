"""The tensors of one step (SPEC §2): a fixture's config, its inputs, and the outputs a kernel writes.

    fx = monokda.load_fixture("step.safetensors")    # checked: every tensor's dtype and shape
    fx.config.R, fx.config.L, fx["in_proj_w"]         # bf16 tensors as uint16 bits
    monokda.save_outputs("out.safetensors", outputs, fx)

Names, dtypes and shapes are SPEC §2's, in one table each (INPUTS, OUTPUTS below).
"""
from dataclasses import dataclass, fields

import numpy as np

from monokda import safetensors

_INT_KEYS = ("D", "H", "K", "V", "F", "N", "C", "W", "nb", "R", "L", "slots", "seed")
_FLOAT_KEYS = ("eps", "l2_eps", "lower_bound")


@dataclass(frozen=True)
class Config:
    """A step's config, as the fixture's metadata strings give it."""
    D: int
    H: int
    K: int
    V: int
    F: int
    N: int
    C: int
    W: int
    nb: int
    R: int
    L: int
    block_write: bool
    conv_layout: str  # "sd": [slots, W-2+L, C]; "ds": [slots, C, W-2+L]
    eps: float
    l2_eps: float
    lower_bound: float
    slots: int
    seed: int

    @property
    def S(self):
        return self.R * self.L

    @property
    def E(self):
        return self.H * self.K

    @property
    def conv_len(self):
        return self.W - 2 + self.L

    # in_proj column offsets (SPEC §3 B): q|k|v = conv input, g2, f_a, beta, pad
    @property
    def col_g2(self):
        return 3 * self.E

    @property
    def col_fa(self):
        return 4 * self.E

    @property
    def col_beta(self):
        return 4 * self.E + self.F

    @classmethod
    def from_metadata(cls, md):
        missing = [f.name for f in fields(cls) if f.name not in md]
        if missing:
            raise ValueError(f"fixture metadata: missing key(s) {', '.join(missing)}")
        vals = {}
        for k in _INT_KEYS:
            try:
                vals[k] = int(md[k])
            except ValueError:
                raise ValueError(f"fixture metadata: {k} = {md[k]!r} is not an integer") from None
        for k in _FLOAT_KEYS:
            try:
                vals[k] = float(md[k])
            except ValueError:
                raise ValueError(f"fixture metadata: {k} = {md[k]!r} is not a number") from None
        if md["block_write"] not in ("0", "1"):
            raise ValueError(f"fixture metadata: block_write = {md['block_write']!r}, expected \"0\" or \"1\"")
        if md["conv_layout"] not in ("sd", "ds"):
            raise ValueError(f"fixture metadata: conv_layout = {md['conv_layout']!r}, expected \"sd\" or \"ds\"")
        cfg = cls(block_write=md["block_write"] == "1", conv_layout=md["conv_layout"], **vals)
        cfg._check()
        return cfg

    def _check(self):
        need = [
            (self.D > 0 and self.H > 0 and self.K > 0 and self.F > 0, "D, H, K, F must be positive"),
            (self.V == self.K, f"V must equal K (V={self.V}, K={self.K})"),
            (self.C == 3 * self.E, f"C must be 3*H*K = {3 * self.E} (got {self.C})"),
            (self.N >= 4 * self.E + self.F + self.H, f"N = {self.N} cannot hold q, k, v, g, f_a, beta"),
            (self.W >= 2, f"W must be >= 2 (got {self.W})"),
            (1 <= self.nb <= (7 if self.block_write else 8), f"nb = {self.nb} out of range"),
            (self.R >= 1 and self.L >= 1 and self.slots >= 1, "R, L and slots must be positive"),
        ]
        for ok, msg in need:
            if not ok:
                raise ValueError(f"fixture config: {msg}")

    def to_metadata(self):
        md = {k: str(getattr(self, k)) for k in _INT_KEYS}
        md.update({k: repr(getattr(self, k)) for k in _FLOAT_KEYS})
        md["block_write"] = "1" if self.block_write else "0"
        md["conv_layout"] = self.conv_layout
        return md

    def conv_state_shape(self):
        if self.conv_layout == "sd":
            return (self.slots, self.conv_len, self.C)
        return (self.slots, self.C, self.conv_len)


def input_specs(c):
    """SPEC §2's input tensors: name -> (safetensors dtype, shape), in file order."""
    S, D, E = c.S, c.D, c.E
    return {
        "prefix": ("BF16", (S, D)),
        "delta": ("BF16", (S, D)),
        "blocks": ("BF16", (S, 8, D)),
        "res_norm_w": ("BF16", (D,)),
        "res_proj_w": ("BF16", (D,)),
        "input_norm_w": ("BF16", (D,)),
        "in_proj_w": ("BF16", (c.N, D)),
        "f_b_w": ("BF16", (E, c.F)),
        "conv_w": ("F32", (c.C, c.W)),
        "A_log": ("F32", (c.H,)),
        "dt_bias": ("F32", (E,)),
        "o_norm_w": ("BF16", (c.V,)),
        "conv_state": ("BF16", c.conv_state_shape()),
        "ssm_state": ("F32", (c.slots, c.H, c.V, c.K)),
        "state_indices": ("I32", (c.R, c.L)),
        "num_accepted": ("I32", (c.R,)),
    }


def output_specs(c):
    """SPEC §2's outputs and exported hand-offs: name -> (safetensors dtype, shape)."""
    S, D, E = c.S, c.D, c.E
    return {
        "prefix_out": ("BF16", (S, D)),
        "blocks": ("BF16", (S, 8, D)),
        "conv_state": ("BF16", c.conv_state_shape()),
        "ssm_state": ("F32", (c.slots, c.H, c.V, c.K)),
        "x": ("BF16", (S, D)),
        "proj": ("BF16", (S, c.N)),
        "g1": ("BF16", (S, E)),
        "qkv": ("BF16", (S, c.C)),
        "o": ("BF16", (S, E)),
        "core_out": ("BF16", (S, E)),
    }


_DTYPES = {"BF16": np.uint16, "F32": np.float32, "I32": np.int32}


def _check_tensor(where, name, arr, dtype, shape):
    if arr.dtype != np.dtype(_DTYPES[dtype]):
        got = "BF16 (uint16 bits)" if arr.dtype == np.uint16 else str(arr.dtype)
        raise ValueError(f"{where}: tensor '{name}' has dtype {got}, expected {dtype}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{where}: tensor '{name}' has shape {list(arr.shape)}, expected {list(shape)}")


class Fixture:
    """One step's inputs: .config, .metadata (the file's strings, verbatim) and the tensors by name."""

    def __init__(self, tensors, metadata, where="fixture"):
        self.metadata = dict(metadata)
        self.config = Config.from_metadata(self.metadata)
        self.tensors = {}
        for name, (dtype, shape) in input_specs(self.config).items():
            if name not in tensors:
                raise ValueError(f"{where}: missing tensor '{name}'")
            arr = np.asarray(tensors[name])
            _check_tensor(where, name, arr, dtype, shape)
            self.tensors[name] = arr
        self._check_slots(where)

    def _check_slots(self, where):
        c, idx, acc = self.config, self.tensors["state_indices"], self.tensors["num_accepted"]
        live = idx[idx > 0]
        if live.size and live.max() >= c.slots:
            raise ValueError(f"{where}: state_indices holds slot {int(live.max())}, outside 0..{c.slots - 1}")
        if np.unique(live).size != live.size:
            raise ValueError(f"{where}: a positive slot appears twice in state_indices")
        if acc.size and (acc.min() < 1 or acc.max() > c.L):
            raise ValueError(f"{where}: num_accepted must be in 1..{c.L}")

    def __getitem__(self, name):
        return self.tensors[name]

    def conv_state_sd(self, conv_state=None):
        """conv_state (the fixture's, or one given in its layout) as [slots, W-2+L, C], either layout."""
        cs = self.tensors["conv_state"] if conv_state is None else conv_state
        return cs if self.config.conv_layout == "sd" else np.swapaxes(cs, 1, 2)

    def conv_state_in_layout(self, sd):
        """The inverse of conv_state_sd: [slots, W-2+L, C] back to the fixture's layout (a contiguous copy)."""
        return np.ascontiguousarray(sd if self.config.conv_layout == "sd" else np.swapaxes(sd, 1, 2))

    def save(self, path, extra_metadata=None):
        md = dict(self.metadata)
        md.update(extra_metadata or {})
        safetensors.save(path, self.tensors, md)


def load_fixture(path):
    """A fixture file, checked against SPEC §2 (ValueError names the first problem)."""
    tensors, md = safetensors.load(path)
    return Fixture(tensors, md, where=str(path))


def check_outputs(outputs, fixture, where="outputs", require=None):
    """Checks the named outputs (all of SPEC §2's by default) against the fixture's config: present,
    dtype, shape. Returns the outputs as numpy arrays."""
    specs = output_specs(fixture.config)
    names = list(specs) if require is None else list(require)
    out = {}
    for name in names:
        if name not in outputs:
            raise ValueError(f"{where}: missing tensor '{name}'")
    for name, value in outputs.items():
        arr = value if isinstance(value, np.ndarray) else safetensors._as_numpy(name, value)[1]
        if name in specs:
            _check_tensor(where, name, arr, *specs[name])
        out[name] = arr
    return out


def save_outputs(path, outputs, fixture, extra_metadata=None, require=None):
    """Writes a kernel's outputs (SPEC §2 names; numpy arrays or torch tensors) with the fixture's
    metadata, after checking them as check_outputs does."""
    out = check_outputs(outputs, fixture, where=str(path), require=require)
    md = dict(fixture.metadata)
    md.update(extra_metadata or {})
    safetensors.save(path, out, md)


def load_outputs(path, fixture=None):
    """(outputs, metadata) of an output file; checked against the fixture when one is given."""
    tensors, md = safetensors.load(path)
    if fixture is not None:
        tensors = check_outputs(tensors, fixture, where=str(path), require=[n for n in output_specs(fixture.config) if n in tensors])
    return tensors, md
