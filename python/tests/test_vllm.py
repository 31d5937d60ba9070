"""vLLM's names and layouts: each vLLM tensor is the right slice of monokda's, element by element,
and the conversions are inverses of each other."""
import numpy as np
import pytest

import monokda
from monokda import vllm


@pytest.fixture(params=["sd", "ds"])
def fx_path(request, fixtures):
    return fixtures(config="small", R=3, L=3, nb=4, layout=request.param, null_requests=1, seed=6)


@pytest.fixture
def fx(fx_path):
    return monokda.load_fixture(fx_path)


def test_inputs_are_the_right_slices(fx):
    c, t = fx.config, fx.tensors
    v = vllm.inputs_to_vllm(fx)  # vLLM defaults: conv state [slots, W-2+L, E], recurrent [slots, H, K, V]
    E, F, H = c.E, c.F, c.H
    assert np.array_equal(v["q_proj.weight"], t["in_proj_w"][0:E])
    assert np.array_equal(v["k_proj.weight"], t["in_proj_w"][E:2 * E])
    assert np.array_equal(v["v_proj.weight"], t["in_proj_w"][2 * E:3 * E])
    assert np.array_equal(v["g_proj.weight"], t["in_proj_w"][3 * E:4 * E])
    assert np.array_equal(v["f_a_proj.weight"], t["in_proj_w"][4 * E:4 * E + F])
    assert np.array_equal(v["b_proj.weight"], t["in_proj_w"][4 * E + F:4 * E + F + H])
    assert v["A_log"].shape == (1, 1, H, 1) and v["self_attention_res_proj.weight"].shape == (1, c.D)
    rng = np.random.default_rng(0)
    sd = fx.conv_state_sd()
    for _ in range(50):
        s, h, i, j = (int(rng.integers(n)) for n in (c.slots, c.H, c.K, c.V))
        assert v["recurrent_state"][s, h, i, j] == t["ssm_state"][s, h, j, i]  # [.., K, V] vs [.., V, K]
        e, w, n = int(rng.integers(E)), int(rng.integers(c.W)), int(rng.integers(c.conv_len))
        assert v["k_conv1d.weight"][e, 0, w] == t["conv_w"][E + e, w]
        assert v["v_conv1d.weight"][e, 0, w] == t["conv_w"][2 * E + e, w]
        assert v["conv_state_q"][s, n, e] == sd[s, n, e]
        assert v["conv_state_v"][s, n, e] == sd[s, n, 2 * E + e]
    ds = vllm.inputs_to_vllm(fx, conv_layout="ds", ssm_layout="hvk")
    assert ds["conv_state_k"].shape == (c.slots, E, c.conv_len)
    assert np.array_equal(ds["conv_state_k"], np.swapaxes(v["conv_state_k"], 1, 2))
    assert np.array_equal(ds["recurrent_state"], t["ssm_state"])


@pytest.mark.parametrize("conv_layout", ["sd", "ds"])
@pytest.mark.parametrize("ssm_layout", ["hkv", "hvk"])
def test_inputs_round_trip(fx, conv_layout, ssm_layout):
    back = vllm.fixture_from_vllm(vllm.inputs_to_vllm(fx, conv_layout, ssm_layout), fx.metadata, conv_layout, ssm_layout)
    pad = slice(4 * fx.config.E + fx.config.F + fx.config.H, None)
    assert not fx["in_proj_w"][pad].any()  # the generator's pad rows are zero, as the rebuilt ones are
    for name in fx.tensors:
        assert np.array_equal(back[name], fx[name]), name


@pytest.mark.parametrize("conv_layout", ["sd", "ds"])
@pytest.mark.parametrize("ssm_layout", ["hkv", "hvk"])
def test_outputs_round_trip(fx, fx_path, reference, conv_layout, ssm_layout):
    outs, _ = monokda.load_outputs(reference(fx_path), fx)
    theirs = vllm.outputs_to_vllm(outs, fx, conv_layout, ssm_layout)
    assert {"core_attn_out", "hidden_states", "q_proj", "b_proj", "q", "k", "v", "conv_state_q", "recurrent_state"} <= set(theirs)
    assert np.array_equal(theirs["core_attn_out"], outs["core_out"])
    # vLLM's kernels see per-head views: those are accepted too
    c = fx.config
    theirs["q"] = theirs["q"].reshape(c.S, c.H, c.K)
    back = vllm.outputs_from_vllm(theirs, fx, conv_layout, ssm_layout)
    pad = 4 * c.E + c.F + c.H
    assert not back["proj"][:, pad:].any()
    assert np.array_equal(back["proj"][:, :pad], outs["proj"][:, :pad])
    for name in outs:
        if name != "proj":
            assert np.array_equal(back[name], outs[name]), name


def test_half_a_group_is_refused(fx):
    theirs = {"q_proj": np.zeros((fx.config.S, fx.config.E), np.uint16)}
    with pytest.raises(ValueError, match="q_proj given without k_proj"):
        vllm.outputs_from_vllm(theirs, fx)
    with pytest.raises(ValueError, match="expected"):
        vllm.outputs_from_vllm({"core_attn_out": np.zeros((1, 3), np.uint16)}, fx)
    with pytest.raises(ValueError, match="ssm_layout"):
        vllm.inputs_to_vllm(fx, ssm_layout="kvh")
