"""Shared pytest fixtures: the monokda binary, fixtures made by `monokda fixture`, and the example
kernel (examples/kda_pre_numpy.py) as a module."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import monokda  # noqa: E402


@pytest.fixture(scope="session")
def monokda_bin():
    return monokda.find_monokda()


@pytest.fixture(scope="session")
def example():
    spec = importlib.util.spec_from_file_location("kda_pre_numpy", ROOT / "examples" / "kda_pre_numpy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory, monokda_bin):
    """make(name, **options) -> path of a fixture written by `monokda fixture` (cached by options)."""
    folder = tmp_path_factory.mktemp("fixtures")
    made = {}

    def make(**options):
        key = tuple(sorted(options.items()))
        if key not in made:
            made[key] = monokda.make_fixture(folder / f"f{len(made)}.safetensors", binary=monokda_bin, **options)
        return made[key]

    return make


@pytest.fixture(scope="session")
def reference(tmp_path_factory, monokda_bin):
    """reference(fixture_path) -> path of `monokda reference`'s outputs for it."""
    import subprocess

    folder = tmp_path_factory.mktemp("reference")

    def run(fixture, *args):
        out = folder / f"{Path(fixture).stem}-{'-'.join(a.replace(':', '_') for a in args) or 'seq'}.safetensors"
        if not out.exists():
            subprocess.run([monokda_bin, "reference", str(fixture), "-o", str(out), *args], check=True,
                           capture_output=True)
        return out

    return run


def pytest_report_header(config):
    return f"monokda: {os.environ.get('MONOKDA_BIN', '(search)')}"
