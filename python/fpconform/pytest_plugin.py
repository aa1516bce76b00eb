"""The fpconform pytest plugin (entry point pytest11 "fpconform"; in a build tree: -p
fpconform.pytest_plugin).

* ini options: fpconform_platform (default platform of assert_conforms and the fixture, default
  "auto"), fpconform_strict (within_tolerance elements fail too, default false) and
  fpconform_attention_platform (the attention audits' default, an attention model or "auto", the
  default: the matmul presets of fpconform_platform are no attention models);
* the ``conformance`` fixture: an object with .platform, .strict, .attention_platform and
  .assert_conforms(...), .audit_matmul(...), .audit_sum(...), .audit_cast(...),
  .audit_attention(...) and .assert_attention_conforms(...) using those defaults;
* every audit a test runs (through the fixture, fpconform.testing.assert_conforms or the
  fpconform functions) is recorded: its verdict goes to the test's JUnit XML properties
  (fpconform_verdict, fpconform_audit; for attention also fpconform_aggregate, the aggregate
  gate's figures) and the terminal summary lists the audits and verdicts.

Example (examples/pytest/test_attention.py)::

    def test_flash_fwd(conformance):
        out = my_flash_fwd(q, k, v, causal=True)
        conformance.assert_attention_conforms(out, q, k, v, causal=True)
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import pytest

import fpconform
import fpconform.testing as _testing

_KEY = "_fpconform_plugin_state"


class _State:
    def __init__(self) -> None:
        self.item: Optional[pytest.Item] = None
        # (nodeid, kind, platform, verdict, counts)
        self.audits: List[Tuple[str, str, str, str, dict]] = []
        self.saved_defaults: dict = {}

    def listener(self, audit: Any, kind: str) -> None:
        if kind == "compare":
            platform = f"{audit.ref.platforms[0]['name']} vs {audit.port.platforms[0]['name']}"
            counts = {"consistent": audit.consistent, "inconsistent": audit.inconsistent}
        else:
            platform = audit.platforms[0]["name"] if audit.platforms else "-"
            counts = audit.counts
        nodeid = self.item.nodeid if self.item is not None else "(outside a test)"
        self.audits.append((nodeid, kind, platform, audit.verdict, dict(counts)))
        if self.item is not None:
            summary = " ".join(f"{k} {v}" for k, v in counts.items())
            self.item.user_properties.append(("fpconform_verdict", audit.verdict))
            self.item.user_properties.append(("fpconform_audit", f"{kind} {platform}: {audit.verdict} ({summary})"))
            gate = getattr(audit, "aggregate", None)
            if gate is not None:
                self.item.user_properties.append(
                    ("fpconform_aggregate", f"{'pass' if gate['pass'] else 'fail'}: relative L2 error "
                     f"{gate['rel_l2']:.4g} (limit {gate['rel_l2_limit']:.4g}), correlation "
                     f"{gate['correlation']:.8g} (limit {gate['correlation_limit']:.8g})"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("fpconform_platform", "fpconform: default platform model(s) of assert_conforms and the "
                  "conformance fixture (a model, an envelope, a comma list or auto)", default="auto")
    parser.addini("fpconform_strict", "fpconform: elements only within the recommended tolerance fail too",
                  type="bool", default=False)
    parser.addini("fpconform_attention_platform", "fpconform: default platform of the conformance fixture's "
                  "attention audits (an attention model, a comma list or auto)", default="auto")


def pytest_configure(config: pytest.Config) -> None:
    state = _State()
    state.saved_defaults = dict(_testing.defaults)  # A pytester run inside a test restores them.
    setattr(config, _KEY, state)
    _testing.defaults["platform"] = config.getini("fpconform_platform") or "auto"
    _testing.defaults["strict"] = bool(config.getini("fpconform_strict"))
    fpconform._listeners.append(state.listener)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = getattr(config, _KEY, None)
    if state is not None and state.listener in fpconform._listeners:
        fpconform._listeners.remove(state.listener)
    if state is not None:
        _testing.defaults.update(state.saved_defaults)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]):
    state = getattr(item.config, _KEY, None)
    if state is not None:
        state.item = item
    yield
    if state is not None:
        state.item = None


class Conformance:
    """What the ``conformance`` fixture gives a test: the ini defaults and the audits bound to them."""

    def __init__(self, platform: str, strict: bool, attention_platform: str = "auto") -> None:
        self.platform = platform
        self.strict = strict
        self.attention_platform = attention_platform

    def assert_conforms(self, out: Any, a: Any, b: Any = None, **kwargs: Any):
        kwargs.setdefault("platform", self.platform)
        kwargs.setdefault("strict", self.strict)
        return _testing.assert_conforms(out, a, b, **kwargs)

    def audit_matmul(self, a: Any, b: Any, out: Any, **kwargs: Any):
        kwargs.setdefault("platform", self.platform)
        kwargs.setdefault("strict", self.strict)
        return fpconform.audit_matmul(a, b, out, **kwargs)

    def audit_sum(self, x: Any, out: Any, **kwargs: Any):
        kwargs.setdefault("platform", self.platform)
        kwargs.setdefault("strict", self.strict)
        return fpconform.audit_sum(x, out, **kwargs)

    def audit_cast(self, x: Any, out: Any, **kwargs: Any):
        return fpconform.audit_cast(x, out, **kwargs)

    def audit_attention(self, q: Any, k: Any, v: Any, out: Any, **kwargs: Any):
        kwargs.setdefault("platform", self.attention_platform)
        return fpconform.audit_attention(q, k, v, out, **kwargs)

    def assert_attention_conforms(self, out: Any, q: Any, k: Any, v: Any, msg: Optional[str] = None,
                                  **kwargs: Any):
        """Audits out = softmax(scale q k^T + mask) v (fpconform.audit_attention's keywords:
        causal=, mask=, scale=, platform=, default the ini's fpconform_attention_platform) and
        raises AssertionError unless the verdict passes: every element explained and the
        aggregate gate (relative L2 error, correlation) within its limits. The message is
        fpconform.testing.conformance_message's (10 elements listed, with their diagnoses)."""
        kwargs.setdefault("max_listed", 10)
        audit = self.audit_attention(q, k, v, out, **kwargs)
        if audit.verdict != "pass":
            raise AssertionError(_testing.conformance_message(audit, msg))
        return audit


@pytest.fixture
def conformance(request: pytest.FixtureRequest) -> Conformance:
    """assert_conforms / audit_* with the ini options fpconform_platform and fpconform_strict."""
    return Conformance(_testing.defaults["platform"], _testing.defaults["strict"],
                       request.config.getini("fpconform_attention_platform") or "auto")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = getattr(config, _KEY, None)
    if state is None or not state.audits:
        return
    tr = terminalreporter
    passed = sum(1 for a in state.audits if a[3] == "pass")
    tr.section("fpconform audits")
    tr.write_line(f"{len(state.audits)} audits: {passed} pass, {len(state.audits) - passed} fail "
                  f"(default platform {_testing.defaults['platform']}, strict {_testing.defaults['strict']})")
    verbose = config.getoption("verbose", 0) > 0
    if not verbose and passed:
        tr.write_line("(failed audits listed; -v lists them all)")
    for nodeid, kind, platform, verdict, counts in state.audits:
        if verdict == "pass" and not verbose:
            continue
        summary = " ".join(f"{k} {v}" for k, v in counts.items())
        tr.write_line(f"{verdict.upper():4}  {kind:7} {platform:32} {summary}  {nodeid}")
