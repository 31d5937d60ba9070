"""vLLM's Kimi-K3 names and layouts, to and from monokda's (SPEC §2).

vLLM's KDA layer keeps in_proj as separate projections (q_proj, k_proj, v_proj, g_proj, f_a_proj,
b_proj), the short conv as one weight and one state per q/k/v, and the recurrent state as
[slots, H, K, V] (its fused recurrent kernel indexes h0 by (k, v)); monokda fuses the projections
into in_proj_w (q|k|v|g|f_a|beta|zero pad), the conv into one [C, W] weight and one state over
C = 3E channels, and holds ssm_state as [slots, H, V, K]. The tables below are the whole mapping.

    theirs = vllm.inputs_to_vllm(fx)                     # what a vLLM-shaped kernel takes
    ours = vllm.outputs_from_vllm(their_outputs, fx)     # what monokda verify reads
    monokda.save_outputs("out.safetensors", ours, fx, require=[])

conv_layout: "sd" = [slots, W-2+L, E] per q/k/v (vLLM's default orientation), "ds" = [slots, E, W-2+L].
ssm_layout: "hkv" = [slots, H, K, V] (vLLM), "hvk" = [slots, H, V, K] (monokda).
"""
import numpy as np

from monokda import safetensors
from monokda.step import Config, Fixture

# monokda input -> vLLM layer parameter or step tensor, name for name (reshaped where noted)
INPUT_NAMES = {
    "res_norm_w": "self_attention_res_norm.weight",
    "res_proj_w": "self_attention_res_proj.weight",  # [1, D]
    "input_norm_w": "input_layernorm.weight",
    "f_b_w": "f_b_proj.weight",
    "A_log": "A_log",  # [1, 1, H, 1]
    "dt_bias": "dt_bias",
    "o_norm_w": "o_norm.weight",
    "state_indices": "spec_state_indices_tensor",
    "num_accepted": "num_accepted_tokens",
}
# in_proj_w's row blocks, in order (the zero pad after b_proj is monokda's alone)
PROJ_BLOCKS = ("q_proj", "k_proj", "v_proj", "g_proj", "f_a_proj", "b_proj")
CONV = ("q", "k", "v")  # conv channel blocks of E each: q_conv1d.weight, conv_state_q, ...
# monokda output or hand-off -> vLLM's name for it in the layer's forward (proj and qkv split into blocks)
OUTPUT_NAMES = {"core_out": "core_attn_out", "x": "hidden_states"}


def _np(name, v):
    return safetensors._as_numpy(name, v)[1]


def _blocks(c):
    """(name, first row, rows) of in_proj's blocks for config c."""
    sizes = (c.E, c.E, c.E, c.E, c.F, c.H)
    out, row = [], 0
    for name, n in zip(PROJ_BLOCKS, sizes):
        out.append((name, row, n))
        row += n
    return out


def _check_layouts(conv_layout, ssm_layout):
    if conv_layout not in ("sd", "ds"):
        raise ValueError(f"conv_layout must be 'sd' or 'ds' (got {conv_layout!r})")
    if ssm_layout not in ("hkv", "hvk"):
        raise ValueError(f"ssm_layout must be 'hkv' or 'hvk' (got {ssm_layout!r})")


def _conv_split(sd, c, conv_layout):
    """monokda conv_state as [slots, W-2+L, C] -> {conv_state_q, _k, _v} in conv_layout."""
    out = {}
    for i, n in enumerate(CONV):
        part = sd[:, :, i * c.E:(i + 1) * c.E]
        out[f"conv_state_{n}"] = np.ascontiguousarray(part if conv_layout == "sd" else np.swapaxes(part, 1, 2))
    return out


def _conv_join(t, c, conv_layout, where):
    """{conv_state_q, _k, _v} in conv_layout -> [slots, W-2+L, C]."""
    parts = []
    for n in CONV:
        name = f"conv_state_{n}"
        a = _np(name, t[name])
        want = (c.slots, c.conv_len, c.E) if conv_layout == "sd" else (c.slots, c.E, c.conv_len)
        if a.shape != want:
            raise ValueError(f"{where}: '{name}' has shape {list(a.shape)}, expected {list(want)} ({conv_layout})")
        parts.append(a if conv_layout == "sd" else np.swapaxes(a, 1, 2))
    return np.concatenate(parts, axis=2)


def _ssm_to(ssm, ssm_layout):
    return np.ascontiguousarray(np.swapaxes(ssm, 2, 3)) if ssm_layout == "hkv" else ssm


def _ssm_from(a, c, ssm_layout, where):
    want = (c.slots, c.H, c.K, c.V) if ssm_layout == "hkv" else (c.slots, c.H, c.V, c.K)
    a = _np("recurrent_state", a)
    if a.shape != want:
        raise ValueError(f"{where}: 'recurrent_state' has shape {list(a.shape)}, expected {list(want)} ({ssm_layout})")
    return _ssm_to(a, ssm_layout)  # the swap is its own inverse


def inputs_to_vllm(fx, conv_layout="sd", ssm_layout="hkv"):
    """A fixture's inputs under vLLM's names and layouts (prefix, delta, blocks keep their names)."""
    _check_layouts(conv_layout, ssm_layout)
    c, t = fx.config, fx.tensors
    out = {n: t[n] for n in ("prefix", "delta", "blocks")}
    for ours, theirs in INPUT_NAMES.items():
        out[theirs] = t[ours]
    out["self_attention_res_proj.weight"] = t["res_proj_w"].reshape(1, c.D)
    out["A_log"] = t["A_log"].reshape(1, 1, c.H, 1)
    for name, row, n in _blocks(c):
        out[f"{name}.weight"] = np.ascontiguousarray(t["in_proj_w"][row:row + n])
    for i, n in enumerate(CONV):
        out[f"{n}_conv1d.weight"] = np.ascontiguousarray(t["conv_w"][i * c.E:(i + 1) * c.E].reshape(c.E, 1, c.W))
    out.update(_conv_split(fx.conv_state_sd(), c, conv_layout))
    out["recurrent_state"] = _ssm_to(t["ssm_state"], ssm_layout)
    return out


def fixture_from_vllm(tensors, metadata, conv_layout="sd", ssm_layout="hkv", where="vllm inputs"):
    """A Fixture from vLLM-named inputs (as inputs_to_vllm gives them) and the step's metadata
    (SPEC §2's strings); in_proj's pad rows are zero."""
    _check_layouts(conv_layout, ssm_layout)
    c = Config.from_metadata(metadata)
    t = {n: _np(n, tensors[n]) for n in tensors}

    def get(name):
        if name not in t:
            raise ValueError(f"{where}: missing tensor '{name}'")
        return t[name]

    ours = {n: get(n) for n in ("prefix", "delta", "blocks")}
    for mine, theirs in INPUT_NAMES.items():
        ours[mine] = get(theirs)
    ours["res_proj_w"] = ours["res_proj_w"].reshape(-1)
    ours["A_log"] = ours["A_log"].reshape(-1)
    w = np.zeros((c.N, c.D), dtype=np.uint16)
    for name, row, n in _blocks(c):
        block = get(f"{name}.weight")
        if block.shape != (n, c.D):
            raise ValueError(f"{where}: '{name}.weight' has shape {list(block.shape)}, expected {[n, c.D]}")
        w[row:row + n] = block
    ours["in_proj_w"] = w
    ours["conv_w"] = np.concatenate([get(f"{n}_conv1d.weight").reshape(c.E, c.W) for n in CONV])
    sd = _conv_join(t, c, conv_layout, where)
    ours["conv_state"] = np.ascontiguousarray(sd if c.conv_layout == "sd" else np.swapaxes(sd, 1, 2))
    ours["ssm_state"] = _ssm_from(get("recurrent_state"), c, ssm_layout, where)
    return Fixture(ours, metadata, where=where)


def outputs_to_vllm(outputs, fx, conv_layout="sd", ssm_layout="hkv"):
    """monokda outputs (SPEC §2 names) under vLLM's names: proj as the six projections' outputs, qkv as
    the conv outputs q, k, v, conv_state per q/k/v, recurrent_state, core_attn_out, hidden_states."""
    _check_layouts(conv_layout, ssm_layout)
    c = fx.config
    out = {}
    for name, a in outputs.items():
        a = _np(name, a)
        if name == "proj":
            for block, row, n in _blocks(c):
                out[block] = np.ascontiguousarray(a[:, row:row + n])
        elif name == "qkv":
            for i, n in enumerate(CONV):
                out[n] = np.ascontiguousarray(a[:, i * c.E:(i + 1) * c.E])
        elif name == "conv_state":
            out.update(_conv_split(fx.conv_state_sd(a), c, conv_layout))
        elif name == "ssm_state":
            out["recurrent_state"] = _ssm_to(a, ssm_layout)
        else:
            out[OUTPUT_NAMES.get(name, name)] = a
    return out


def outputs_from_vllm(tensors, fx, conv_layout="sd", ssm_layout="hkv", where="vllm outputs"):
    """vLLM-named outputs -> SPEC §2 names and layouts. Only what is there is converted; a group
    given in part (q_proj without b_proj, conv_state_q alone) is a ValueError. Per-head views
    ([S, H, K], [1, S, H, K]) are flattened to [S, E]."""
    _check_layouts(conv_layout, ssm_layout)
    c = fx.config
    t = dict(tensors)
    out = {}

    def rows(name, width):
        a = _np(name, t.pop(name))
        if a.size != c.S * width:
            raise ValueError(f"{where}: '{name}' has shape {list(a.shape)}, expected {c.S} rows of {width}")
        return a.reshape(c.S, width)

    def group(names):
        present = [n for n in names if n in t]
        if present and len(present) != len(names):
            missing = [n for n in names if n not in t]
            raise ValueError(f"{where}: {', '.join(present)} given without {', '.join(missing)}")
        return bool(present)

    blocks = _blocks(c)
    if group([b for b, _, _ in blocks]):
        first = _np(blocks[0][0], t[blocks[0][0]])
        proj = np.zeros((c.S, c.N), dtype=first.dtype)
        for name, row, n in blocks:
            proj[:, row:row + n] = rows(name, n)
        out["proj"] = proj
    if group(list(CONV)):
        out["qkv"] = np.concatenate([rows(n, c.E) for n in CONV], axis=1)
    conv_names = [f"conv_state_{n}" for n in CONV]
    if group(conv_names):
        out["conv_state"] = fx.conv_state_in_layout(_conv_join(t, c, conv_layout, where))
        for n in conv_names:
            t.pop(n)
    if "recurrent_state" in t:
        out["ssm_state"] = _ssm_from(t.pop("recurrent_state"), c, ssm_layout, where)
    for ours, theirs in OUTPUT_NAMES.items():
        if theirs in t:
            out[ours] = rows(theirs, c.E if ours == "core_out" else c.D)
    for name in ("g1", "o"):
        if name in t:
            out[name] = rows(name, c.E)
    for name, a in t.items():
        out.setdefault(name, _np(name, a))
    return out
