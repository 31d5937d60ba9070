"""Runs `monokda verify` from Python and turns its JSON report into a readable verdict.

    def test_my_kernel(tmp_path):
        fx = monokda.make_fixture(tmp_path / "step.safetensors", config="small", R=4, L=3)
        monokda.save_outputs(tmp_path / "out.safetensors", my_kernel(monokda.load_fixture(fx)), monokda.load_fixture(fx))
        monokda.assert_same(fx, tmp_path / "out.safetensors")

The monokda binary is $MONOKDA_BIN, else `monokda` on PATH, else build/monokda of this checkout.
"""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from monokda import safetensors
from monokda.step import Fixture


class VerifyError(RuntimeError):
    """monokda verify could not judge the candidate: bad input (exit 2) or no monokda binary."""


def find_monokda(binary=None):
    """Path of the monokda binary (see the module's docstring)."""
    for cand in (binary, os.environ.get("MONOKDA_BIN"), shutil.which("monokda"),
                 Path(__file__).resolve().parents[2] / "build" / "monokda"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return str(cand)
    raise VerifyError("no monokda binary: set MONOKDA_BIN, put monokda on PATH, or build this checkout (build/monokda)")


def make_fixture(path, config="small", R=2, L=4, nb=4, block_write=False, layout="sd", null_requests=0, seed=1,
                 binary=None):
    """Writes a deterministic fixture with `monokda fixture` and returns its path."""
    cmd = [find_monokda(binary), "fixture", "--config", config, "--R", str(R), "--L", str(L), "--nb", str(nb),
           "--layout", layout, "--null-requests", str(null_requests), "--seed", str(seed), "-o", str(path)]
    if block_write:
        cmd.append("--block-write")
    _run(cmd)
    return Path(path)


def _run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 2:
        raise VerifyError(p.stderr.strip() or f"{cmd[0]} {cmd[1]}: exit 2 (bad input)")
    if p.returncode not in (0, 1):
        raise VerifyError(f"{' '.join(cmd[:2])} exited {p.returncode}: {p.stderr.strip()}")
    return p


class VerifyReport:
    """`monokda verify`'s verdict: .passed, .report (the JSON, as a dict), .checks, .failed."""

    def __init__(self, report, exit_code, stdout=""):
        self.report, self.exit_code, self.stdout = report, exit_code, stdout

    @property
    def passed(self):
        return self.exit_code == 0

    @property
    def checks(self):
        return list(self.report.get("checks", []))

    @property
    def failed(self):
        return [c for c in self.checks if _verdict(c) == "FAIL"]

    def message(self):
        """The failing checks, one paragraph each: name, numbers, first differing element."""
        lines = [f"monokda verify: {len(self.failed)} of {len(self.checks)} checks failed"
                 f" (fixture {self.report.get('fixture', {}).get('path', '?')})"]
        for c in self.failed:
            lines.append(f"  FAIL {c.get('name', '?')}: {c.get('summary', '')}".rstrip())
            first = c.get("first")
            if first:
                more = c.get("more", 0)
                lines.append(f"       first difference: {_where(first)}" + (f" (and {more} more)" if more else ""))
        not_checked = [c.get("name", "?") for c in self.checks if _verdict(c) == "NOT CHECKED"]
        if not_checked:
            lines.append(f"  not checked: {', '.join(not_checked)}")
        return "\n".join(lines)

    def __str__(self):
        return "monokda verify: passed" if self.passed else self.message()


def _verdict(check):
    return str(check.get("status", "")).upper().replace("_", " ")


def _where(first):
    """The report's first element as a line: "qkv (q) request 0 token 1 head 0 column 3: got (bits), expected (bits)"."""
    if first.get("text"):
        return first["text"]
    where = first.get("tensor", "?") + (f" ({first['part']})" if first.get("part") else "")
    where += "".join(f" {k} {v}" for k, v in first.get("at", {}).items())
    return f"{where}: {first.get('candidate')} ({first.get('candidate_bits')}), expected {first.get('expected')} ({first.get('expected_bits')})"


def _as_file(obj, folder, name, fixture=None):
    """A path for obj: a path as it is; a Fixture or a dict of tensors written to folder/name."""
    if isinstance(obj, (str, os.PathLike)):
        return str(obj)
    path = os.path.join(folder, name)
    if isinstance(obj, Fixture):
        obj.save(path)
    elif isinstance(obj, dict):
        safetensors.save(path, obj, dict(fixture.metadata) if isinstance(fixture, Fixture) else None)
    else:
        raise TypeError(f"expected a path, a Fixture or a dict of tensors, got {type(obj).__name__}")
    return path


def verify(fixture, candidate, *, map=None, ssm_layout=None, in_proj=None, envelope=None, extra_args=(),
           binary=None):
    """Runs `monokda verify FIXTURE CANDIDATE --report ...`; returns a VerifyReport (passed or not).
    fixture/candidate: paths, a Fixture, or a dict of tensors (written to a temporary file).
    map: {their_name: our_name} (vLLM's names, for instance); ssm_layout: "hvk" | "hkv";
    in_proj: "exact" | "tensor-cores"; envelope: "measure" or an envelope file. VerifyError on bad input."""
    with tempfile.TemporaryDirectory(prefix="monokda-verify-") as tmp:
        fx = _as_file(fixture, tmp, "fixture.safetensors")
        cand = _as_file(candidate, tmp, "candidate.safetensors", fixture if isinstance(fixture, Fixture) else None)
        report_path = os.path.join(tmp, "report.json")
        cmd = [find_monokda(binary), "verify", fx, cand, "--report", report_path]
        if map:
            cmd += ["--map", ",".join(f"{theirs}={ours}" for theirs, ours in map.items())]
        if ssm_layout:
            cmd += ["--ssm-layout", ssm_layout]
        if in_proj:
            cmd += ["--in-proj", in_proj]
        if envelope:
            cmd += ["--envelope", str(envelope)]
        cmd += list(extra_args)
        p = _run(cmd)
        try:
            with open(report_path) as f:
                report = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise VerifyError(f"monokda verify wrote no readable report ({e}); stderr: {p.stderr.strip()}") from None
        return VerifyReport(report, p.returncode, p.stdout)


def assert_same(fixture, candidate, **options):
    """pytest helper: passes when `monokda verify` passes the candidate's outputs for the fixture;
    otherwise raises AssertionError naming each failing check and its first differing element.
    Options as verify()."""
    __tracebackhide__ = True  # pytest: show the caller's line, not this one
    rep = verify(fixture, candidate, **options)
    if not rep.passed:
        raise AssertionError(rep.message())
    return rep
