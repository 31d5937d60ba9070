"""monokda.verify and assert_same, as docs/verify-your-kernel.md uses them: a correct kernel passes;
a planted bug fails with a message naming the check and the first differing element; vLLM's names
and layouts go through --map / --ssm-layout or the vllm module; bad input is a VerifyError."""
import numpy as np
import pytest

import monokda
from monokda import safetensors, vllm

STEP = dict(config="small", R=4, L=3, nb=4, null_requests=1, seed=1)


def test_a_correct_kernel_passes(tmp_path, fixtures, example):
    f = fixtures(**STEP)
    fx = monokda.load_fixture(f)
    monokda.save_outputs(tmp_path / "out.safetensors", example.kda_pre(fx), fx)
    rep = monokda.assert_same(f, tmp_path / "out.safetensors")
    assert rep.passed and rep.report["verdict"] == "pass"
    assert {c["name"] for c in rep.checks} >= {"exact.prefix_out", "stage.qkv", "envelope.core_out"}
    assert str(rep) == "monokda verify: passed"


def test_a_planted_bug_names_the_check_and_the_element(tmp_path, fixtures, example):
    f = fixtures(**STEP)
    fx = monokda.load_fixture(f)
    clean, planted = example.kda_pre(fx), example.kda_pre(fx, "conv-round-before-silu")
    monokda.save_outputs(tmp_path / "bad.safetensors", planted, fx)
    with pytest.raises(AssertionError) as e:
        monokda.assert_same(f, tmp_path / "bad.safetensors")
    msg = str(e.value)
    assert "FAIL stage.qkv: " in msg
    # proj is untouched, so D fed it gives the clean qkv: the first element that differs from it
    c = fx.config
    assert np.array_equal(clean["proj"], planted["proj"])
    i = int(np.flatnonzero(clean["qkv"].ravel() != planted["qkv"].ravel())[0])
    row, col = divmod(i, c.C)
    part = "qkv"[col // c.E]
    where = f"qkv ({part}) request {row // c.L} token {row % c.L} head {col % c.E // c.K} column {col}:"
    assert f"first difference: {where}" in msg, msg
    rep = monokda.verify(f, tmp_path / "bad.safetensors")
    assert not rep.passed and rep.exit_code == 1
    assert rep.failed[0]["name"] == "stage.qkv"
    assert rep.failed[0]["first"]["at"] == {"request": row // c.L, "token": row % c.L, "head": col % c.E // c.K, "column": col}


def test_vllm_names_and_layouts(tmp_path, fixtures, example):
    f = fixtures(**STEP)
    fx = monokda.load_fixture(f)
    ours = example.kda_pre(fx)
    # renamed in the file: --map and --ssm-layout
    renamed = {k: v for k, v in ours.items() if k not in ("core_out", "ssm_state")}
    renamed["core_attn_out"] = ours["core_out"]
    renamed["recurrent_state"] = np.ascontiguousarray(np.swapaxes(ours["ssm_state"], 2, 3))  # [slots, H, K, V]
    safetensors.save(tmp_path / "renamed.safetensors", renamed, dict(fx.metadata))
    monokda.assert_same(f, tmp_path / "renamed.safetensors", map={"core_attn_out": "core_out", "recurrent_state": "ssm_state"},
                        ssm_layout="hkv")
    # split as vLLM's layer holds them, and joined back by the vllm module
    back = vllm.outputs_from_vllm(vllm.outputs_to_vllm(ours, fx), fx)
    monokda.save_outputs(tmp_path / "joined.safetensors", back, fx, require=[])
    monokda.assert_same(f, tmp_path / "joined.safetensors")


def test_bad_input_is_a_verify_error(tmp_path, fixtures, example):
    f = fixtures(**STEP)
    fx = monokda.load_fixture(f)
    outs = example.kda_pre(fx)
    del outs["core_out"]
    monokda.save_outputs(tmp_path / "partial.safetensors", outs, fx, require=[])
    with pytest.raises(monokda.VerifyError, match="core_out"):
        monokda.verify(f, tmp_path / "partial.safetensors")
