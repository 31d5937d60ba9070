"""monokda's Python side: fixtures and outputs in safetensors, vLLM's names and layouts, and a pytest
helper that holds a kernel's outputs to `monokda verify`.

    import monokda
    fx = monokda.load_fixture("step.safetensors")
    monokda.save_outputs("out.safetensors", my_kernel(fx), fx)
    monokda.assert_same("step.safetensors", "out.safetensors")   # in a pytest test

numpy only; torch is imported when a torch tensor is given or asked for.
"""
from monokda import bf16, safetensors, vllm
from monokda.step import Config, Fixture, check_outputs, input_specs, load_fixture, load_outputs, output_specs, save_outputs
from monokda.verify import VerifyError, VerifyReport, assert_same, find_monokda, make_fixture, verify

__all__ = [
    "bf16", "safetensors", "vllm", "Config", "Fixture", "check_outputs", "input_specs", "load_fixture",
    "load_outputs", "output_specs", "save_outputs", "VerifyError", "VerifyReport", "assert_same", "find_monokda",
    "make_fixture", "verify",
]
