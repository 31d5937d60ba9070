"""Fixtures and outputs held to SPEC §2: the config from the metadata, every tensor's dtype and
shape, slots and num_accepted, conv_state in either layout; problems named."""
import numpy as np
import pytest

import monokda
from monokda import safetensors


def test_config_and_tensors_of_a_fixture(fixtures):
    fx = monokda.load_fixture(fixtures(config="small", R=3, L=2, nb=5, block_write=True, layout="ds", seed=4))
    c = fx.config
    assert (c.R, c.L, c.nb, c.block_write, c.conv_layout) == (3, 2, 5, True, "ds")
    assert (c.D, c.H, c.K, c.F, c.W) == (256, 2, 32, 16, 4)
    assert c.S == 6 and c.E == 64 and c.C == 192 and c.conv_len == 4
    assert c.N >= 4 * c.E + c.F + c.H and c.N % 16 == 0
    assert fx["conv_state"].shape == (c.slots, c.C, c.conv_len)
    assert fx.conv_state_sd().shape == (c.slots, c.conv_len, c.C)
    for name, (dtype, shape) in monokda.input_specs(c).items():
        assert fx[name].shape == shape, name


def ds_twin(fx):
    """The same step with conv_state held [slots, C, W-2+L]."""
    t = dict(fx.tensors, conv_state=np.ascontiguousarray(np.swapaxes(fx["conv_state"], 1, 2)))
    return monokda.Fixture(t, dict(fx.metadata, conv_layout="ds"))


def test_both_conv_layouts_hold_the_same_state(fixtures):
    sd = monokda.load_fixture(fixtures(config="small", R=2, L=3, layout="sd", seed=9))
    ds = ds_twin(sd)
    c = sd.config
    assert ds["conv_state"].shape == (c.slots, c.C, c.conv_len)
    assert ds["conv_state"][1, 5, 2] == sd["conv_state"][1, 2, 5]  # channel 5, entry 2 of slot 1
    assert np.array_equal(ds.conv_state_sd(), sd["conv_state"])
    assert np.array_equal(ds.conv_state_in_layout(ds.conv_state_sd()), ds["conv_state"])
    assert np.array_equal(sd.conv_state_in_layout(sd.conv_state_sd()), sd["conv_state"])


def broken(fixture_path, edit):
    tensors, md = safetensors.load(fixture_path)
    edit(tensors, md)
    return tensors, md


@pytest.mark.parametrize("edit,message", [
    (lambda t, m: t.pop("delta"), "missing tensor 'delta'"),
    (lambda t, m: t.update(prefix=t["prefix"].astype(np.float32)), "'prefix' has dtype float32, expected BF16"),
    (lambda t, m: t.update(ssm_state=t["ssm_state"].astype(np.float64)), "'ssm_state' has dtype float64, expected F32"),
    (lambda t, m: t.update(state_indices=t["state_indices"].astype(np.int64)), "'state_indices' has dtype int64"),
    (lambda t, m: t.update(o_norm_w=t["o_norm_w"][:-1]), "'o_norm_w' has shape"),
    (lambda t, m: m.pop("nb"), "missing key"),
    (lambda t, m: m.update(R="two"), "R = 'two' is not an integer"),
    (lambda t, m: m.update(block_write="yes"), "block_write"),
    (lambda t, m: m.update(conv_layout="dd"), "conv_layout"),
    (lambda t, m: t["state_indices"].__setitem__((1, 0), t["state_indices"][0, 0]), "appears twice"),
    (lambda t, m: t["state_indices"].__setitem__((0, 0), 10 ** 6), "outside"),
    (lambda t, m: t["num_accepted"].__setitem__(0, 0), "num_accepted"),
])
def test_problems_are_named(fixtures, edit, message):
    tensors, md = broken(fixtures(config="small", R=2, L=3, seed=2), edit)
    with pytest.raises(ValueError, match=message):
        monokda.Fixture(tensors, md)


def test_outputs_are_checked_before_they_are_written(tmp_path, fixtures, reference):
    f = fixtures(config="small", R=2, L=3, seed=2)
    fx = monokda.load_fixture(f)
    outs, _ = monokda.load_outputs(reference(f), fx)
    good = tmp_path / "good.safetensors"
    monokda.save_outputs(good, outs, fx, extra_metadata={"producer": "test"})
    back, md = monokda.load_outputs(good, fx)
    assert md["producer"] == "test" and md["R"] == fx.metadata["R"]
    assert all(np.array_equal(back[k], outs[k]) for k in outs)
    bad = dict(outs, core_out=monokda.bf16.to_f32(outs["core_out"]))
    with pytest.raises(ValueError, match="'core_out' has dtype float32, expected BF16"):
        monokda.save_outputs(tmp_path / "bad.safetensors", bad, fx)
    with pytest.raises(ValueError, match="missing tensor 'o'"):
        monokda.save_outputs(tmp_path / "bad.safetensors", {k: v for k, v in outs.items() if k != "o"}, fx)
    partial = tmp_path / "partial.safetensors"
    monokda.save_outputs(partial, {"core_out": outs["core_out"]}, fx, require=["core_out"])
    assert not (tmp_path / "bad.safetensors").exists()
