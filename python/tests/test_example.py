"""examples/kda_pre_numpy.py, the Python reference: the same outputs as monokda's C++ reference on
every kind of step, its planted bugs live, bad input named."""
import subprocess
import sys

import numpy as np
import pytest

import monokda
from monokda import bf16

CASES = [
    dict(config="small", R=4, L=3, nb=4, null_requests=1, seed=1),
    dict(config="small", R=3, L=2, nb=5, block_write=True, layout="ds", null_requests=1, seed=4),
    dict(config="small", R=2, L=1, nb=8, seed=7),
    dict(config="small", R=5, L=6, nb=2, layout="ds", null_requests=2, seed=12),
    dict(config="k3", R=1, L=2, nb=3, block_write=True, seed=3),
]


def agreement(got, want):
    """(fraction of identical elements, largest difference in bf16 ulps) of two bf16 tensors."""
    same = np.mean(got == want)
    def ordered(b):
        b = b.astype(np.int32)
        return np.where(b & 0x8000, -(b & 0x7FFF), b)
    return same, int(np.max(np.abs(ordered(got) - ordered(want)))) if got.size else 0


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_matches_the_cpp_reference(tmp_path, fixtures, reference, example, case):
    f = fixtures(**case)
    fx = monokda.load_fixture(f)
    ours = example.kda_pre(fx)
    want, _ = monokda.load_outputs(reference(f), fx)
    for name in ("prefix_out", "blocks", "conv_state"):  # elementwise: bit for bit
        assert np.array_equal(ours[name], want[name]), name
    for name in ("x", "proj", "g1", "qkv", "o", "core_out"):
        same, ulp = agreement(ours[name], want[name])
        assert same >= 0.999 and ulp <= 1, (name, same, ulp)
    # the state in f32: exp is rounded once from f64 here, by libm's expf there
    err = np.abs(ours["ssm_state"] - want["ssm_state"]).max()
    assert err <= 1e-5 * max(1.0, np.abs(want["ssm_state"]).max()), err


def test_the_layout_changes_nothing_but_the_layout(tmp_path, fixtures, reference, example):
    from test_step import ds_twin

    f = fixtures(config="small", R=3, L=4, nb=3, null_requests=1, seed=8)
    sd = monokda.load_fixture(f)
    ds = ds_twin(sd)
    a, b = example.kda_pre(sd), example.kda_pre(ds)
    assert np.array_equal(np.swapaxes(b["conv_state"], 1, 2), a["conv_state"])
    assert all(np.array_equal(a[k], b[k]) for k in a if k != "conv_state")
    # and monokda's reference agrees on the twin
    ds.save(tmp_path / "ds.safetensors")
    want, _ = monokda.load_outputs(reference(tmp_path / "ds.safetensors"), ds)
    assert np.array_equal(want["conv_state"], b["conv_state"])


def run(args, **kw):
    return subprocess.run([sys.executable, str(monokda_example()), *args], capture_output=True, text=True, **kw)


def monokda_example():
    from conftest import ROOT

    return ROOT / "examples" / "kda_pre_numpy.py"


def test_command_line(tmp_path, fixtures):
    f = fixtures(config="small", R=2, L=3, seed=2)
    out = tmp_path / "out.safetensors"
    p = run([str(f), str(out)])
    assert p.returncode == 0, p.stderr
    outs, md = monokda.load_outputs(out, monokda.load_fixture(f))
    assert set(outs) == set(monokda.output_specs(monokda.load_fixture(f).config))
    assert md["producer"] == "examples/kda_pre_numpy.py"
    listed = run(["--list-bugs"]).stdout
    example_bugs = [line.split()[0] for line in listed.splitlines()]
    assert {"conv-round-before-silu", "last-state-only", "crash-on-nb8", "hang-on-l7"} <= set(example_bugs)


def test_bad_input_is_named_and_writes_nothing(tmp_path, fixtures):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00" * 5)
    out = tmp_path / "out.safetensors"
    p = run([str(bad), str(out)])
    assert p.returncode == 2 and "truncated" in p.stderr and not out.exists()
    p = run([str(fixtures(config="small", R=1, L=1, seed=1)), str(out), "--bug", "nope"])
    assert p.returncode == 2 and "unknown bug" in p.stderr and not out.exists()


@pytest.mark.parametrize("bug,tensor", [
    ("conv-round-before-silu", "qkv"),
    ("last-state-only", "ssm_state"),
    ("null-state-reads-slot0", "o"),
    ("ssm-transposed", "ssm_state"),
])
def test_each_planted_bug_changes_what_it_says(fixtures, example, bug, tensor):
    fx = monokda.load_fixture(fixtures(config="small", R=4, L=3, nb=4, null_requests=1, seed=1))
    clean, planted = example.kda_pre(fx), example.kda_pre(fx, bug)
    assert not np.array_equal(clean[tensor], planted[tensor])
    untouched = {"conv-round-before-silu": "prefix_out", "last-state-only": "core_out",
                 "null-state-reads-slot0": "qkv", "ssm-transposed": "core_out"}[bug]
    assert np.array_equal(clean[untouched], planted[untouched])


def test_planted_crash_and_hang(tmp_path, fixtures):
    out = tmp_path / "out.safetensors"
    p = run([str(fixtures(config="small", R=1, L=2, nb=8, seed=1)), str(out), "--bug", "crash-on-nb8"])
    assert p.returncode == 1 and "planted crash: nb = 8" in p.stderr and not out.exists()
    with pytest.raises(subprocess.TimeoutExpired):
        run([str(fixtures(config="small", R=1, L=7, nb=2, seed=1)), str(out), "--bug", "hang-on-l7"], timeout=3)
    assert not out.exists()
