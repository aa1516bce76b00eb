"""The pytest plugin, run in pytester's sandboxes: ini options, the conformance fixture, the
terminal summary, the JUnit XML properties, and assert_conforms' message."""

import importlib.metadata

import numpy as np
import pytest

import fpconform
import fpconform.testing as ft


def plugin_args():
    """-p fpconform.pytest_plugin unless the installed package's pytest11 entry point loads it."""
    eps = importlib.metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return [] if any(ep.name == "fpconform" for ep in group) else ["-p", "fpconform.pytest_plugin"]


def run_with_junit(pytester, ini, **files):
    """pytest with the plugin, verbose, on the test files `files` (name=source) under the [pytest]
    options `ini`, writing junit.xml; returns the run's result."""
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile(**files)
    return pytester.runpytest(*plugin_args(), "--junitxml=junit.xml", "-p", "no:cacheprovider", "-v")


KERNEL_TESTS = '''
import numpy as np
import fpconform
from fpconform.testing import assert_conforms

A = np.float32([[1.0, 2.0], [3.0, 4.0]])
B = np.float32([[0.5, 0.0], [0.25, 1.0]])

def test_good():
    assert_conforms(A @ B, A, B, tolerance=False)

def test_bad():
    assert_conforms((A @ B) * np.float32(2), A, B, tolerance=False)

def test_fixture(conformance):
    assert conformance.platform == "cpu-f32-seq"
    assert conformance.strict is True
    conformance.assert_conforms(A @ B, A, B, tolerance=False)
'''


def test_plugin_summary_verdicts_and_junit(pytester):
    result = run_with_junit(pytester, "fpconform_platform = cpu-f32-seq\nfpconform_strict = true\n",
                            test_kernel=KERNEL_TESTS)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*= fpconform audits =*",
        "3 audits: 2 pass, 1 fail (default platform cpu-f32-seq, strict True)",
        "PASS  matmul  cpu-f32-seq*identical 4*test_kernel.py::test_good",
        "FAIL  matmul  cpu-f32-seq*unexplained 4*test_kernel.py::test_bad",
        "*Tensor-likes are not close!*",
    ])
    quiet = pytester.runpytest(*plugin_args(), "-p", "no:cacheprovider")
    quiet.stdout.fnmatch_lines(["3 audits: 2 pass, 1 fail*", "(failed audits listed; -v lists them all)",
                                "FAIL  matmul*test_bad"])
    assert "PASS  matmul" not in quiet.stdout.str()
    xml = (pytester.path / "junit.xml").read_text()
    assert '<property name="fpconform_verdict" value="fail"' in xml
    assert '<property name="fpconform_verdict" value="pass"' in xml
    assert 'name="fpconform_audit" value="matmul cpu-f32-seq: pass (identical 4' in xml


def test_plugin_defaults_without_ini(pytester):
    pytester.makepyfile(test_one='''
import fpconform.testing as ft
def test_defaults(conformance):
    assert conformance.platform == "auto" and conformance.strict is False
    assert ft.defaults == {"platform": "auto", "strict": False}
''')
    result = pytester.runpytest(*plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "fpconform audits" not in result.stdout.str()  # no audit, no section


def test_assert_conforms_message_shape():
    a = np.float32([[1.0, 2.0], [3.0, 4.0]])
    b = np.eye(2, dtype=np.float32)
    out = a @ b
    assert ft.assert_conforms(out, a, b, platform="cpu-f32-seq", tolerance=False) is None
    bad = out.copy()
    bad[1, 0] = -bad[1, 0]
    with pytest.raises(AssertionError) as e:
        ft.assert_conforms(bad, a, b, platform="cpu-f32-seq", tolerance=False, msg="kernel v2")
    lines = str(e.value).splitlines()
    assert lines[0] == "kernel v2"
    assert lines[2] == "Tensor-likes are not close!"
    assert lines[4] == "Mismatched elements: 1 / 4 (25.0%)"
    assert lines[5].startswith("Greatest absolute difference: 6 at index (1, 0)")
    assert lines[6].startswith("Greatest relative difference: 2 at index (1, 0)")
    text = str(e.value)
    assert "fpconform audit matmul: FAIL against cpu-f32-seq" in text
    assert "Classes against cpu-f32-seq: identical 3 within_bound 0 within_tolerance 0 unexplained 1" in text
    assert "sign flipped" in text or "sign" in text.split("Listed elements")[1]
    # op sum and cast.
    ft.assert_conforms(np.sum(a, axis=1), a, op="sum", platform="numpy-sum-f32", tolerance=False)
    ft.assert_conforms(fpconform.cast(a, "bfloat16"), a, op="cast", tolerance=False)
    with pytest.raises(ValueError, match="op 'conv'"):
        ft.assert_conforms(out, a, b, op="conv")


ATTENTION_TESTS = '''
import numpy as np
import fpconform

Q = np.float32([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
K = np.float32([[1.0, 0.0], [0.0, 1.0]])
V = np.float32([[0.0, 1.0], [1.0, 0.0]])

def test_good(conformance):
    assert conformance.attention_platform == "correctly-rounded"
    conformance.assert_attention_conforms(fpconform.exact_attention(Q, K, V), Q, K, V)

def test_rows_swapped(conformance):
    conformance.assert_attention_conforms(fpconform.exact_attention(Q, K, V)[::-1], Q, K, V)
'''


def test_plugin_attention_fixture_and_aggregate_property(pytester):
    result = run_with_junit(pytester, "fpconform_attention_platform = correctly-rounded\n", test_attn=ATTENTION_TESTS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*Tensor-likes are not close!*",
        "*Aggregate against correctly-rounded over 6 finite elements: FAIL*",
        "PASS  attention correctly-rounded*identical 6*test_attn.py::test_good",
        "FAIL  attention correctly-rounded*test_attn.py::test_rows_swapped",
    ])
    xml = (pytester.path / "junit.xml").read_text()
    assert '<property name="fpconform_aggregate" value="pass: relative L2 error' in xml
    assert '<property name="fpconform_aggregate" value="fail: relative L2 error' in xml
