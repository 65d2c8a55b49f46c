"""pytest plugin for E2B's vendored Python suites run against `cellbox serve` (scripts/e2b-tests).

Loaded with `-p pytest_cellbox_e2b` (tests/e2b/pytest on PYTHONPATH); the vendored tests and
their conftest.py are not changed. It
- skips the tests tests/e2b/skips.txt lists for this suite ($E2B_HARNESS_SUITE), each with the
  file's reason, prefixed "cellbox: ";
- runs the suites' offline unit tests (those in tests/ itself, not its subfolders, which mock the
  API or serve it themselves) without the E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY that point the
  other tests at cellbox, as in E2B's own CI where they are unset: several check the SDK's
  default URLs;
- writes every test's outcome (and a skip's reason, a failure's short message) as JSON to
  $E2B_HARNESS_REPORT, for scripts/e2b-tests to count (under xdist the controller writes it).
"""

import fnmatch
import json
import os

import pytest

REASON_PREFIX = "cellbox: "


def load_skips(path, suite):
    """The (pattern, reason) pairs of `[suite]` in the skips file: `PATTERN | REASON` lines."""
    rules, current = [], None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = line[1:-1].strip()
                continue
            if current != suite:
                continue
            pattern, sep, reason = line.partition(" | ")
            if not sep:
                raise ValueError(f"{path}: no ' | REASON' in line: {line}")
            rules.append((pattern.strip(), reason.strip()))
    return rules


def skip_reason(nodeid, rules):
    for pattern, reason in rules:
        if fnmatch.fnmatchcase(nodeid, pattern):
            return reason
    return None


def pytest_collection_modifyitems(config, items):
    path, suite = os.environ.get("E2B_HARNESS_SKIPS"), os.environ.get("E2B_HARNESS_SUITE")
    if not path or not suite:
        return
    rules = load_skips(path, suite)
    for item in items:
        reason = skip_reason(item.nodeid, rules)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=REASON_PREFIX + reason))


# The variables scripts/e2b-tests sets to point the SDKs at cellbox.
SERVER_VARIABLES = ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")


def is_offline(nodeid):
    """The unit tests in the suite's top folder (tests/test_*.py); those in its subfolders
    (sync, async, shared, charts, images) use a sandbox."""
    path = nodeid.split("::", 1)[0]
    return path.startswith("tests/") and "/" not in path[len("tests/"):]


@pytest.fixture(autouse=True)
def _cellbox_offline_environment(request, monkeypatch):
    if is_offline(request.node.nodeid):
        for name in SERVER_VARIABLES:
            monkeypatch.delenv(name, raising=False)


class Recorder:
    def __init__(self, out):
        self.out = out
        self.tests = {}

    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(report.nodeid, {"outcome": "passed"})
        if report.skipped:
            if hasattr(report, "wasxfail"):
                entry.update(outcome="xfailed", reason=str(report.wasxfail))
            else:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                if reason.startswith("Skipped: "):
                    reason = reason[len("Skipped: "):]
                entry.update(outcome="skipped", reason=reason)
        elif report.failed:
            # A failed teardown after a failed call keeps the call's message.
            if entry["outcome"] != "failed":
                message = getattr(report.longrepr, "reprcrash", None)
                message = message.message if message is not None else str(report.longrepr)[-500:]
                entry.update(outcome="failed", when=report.when, message=message[:2000])

    def pytest_collectreport(self, report):
        if report.failed:
            self.tests[report.nodeid or "<collection>"] = {
                "outcome": "failed", "when": "collect", "message": str(report.longrepr)[-2000:]}

    def pytest_sessionfinish(self, session):
        with open(self.out, "w", encoding="utf-8") as f:
            json.dump(self.tests, f, indent=1, sort_keys=True)


def pytest_configure(config):
    out = os.environ.get("E2B_HARNESS_REPORT")
    if out and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(out), "cellbox-e2b-recorder")
