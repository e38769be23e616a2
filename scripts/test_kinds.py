#!/usr/bin/env python3
"""Tests live by kind. In each test target, `Unit/` holds tests of values and pure logic (no
process, server, socket, database server or child program; fast), `Integration/` holds the tests
that start any of those, and `Support/` their fixtures.

    test_kinds.py           checks the layout: every test file in one of the three folders, and
                            no Unit/ file reaching for a server, a process or the network
    test_kinds.py --filter  prints the `swift test --filter` pattern of every Unit/ suite
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "Tests"
KINDS = ("Unit", "Integration", "Support")

# What an integration test uses: the fixtures that start PostgreSQL databases, gateways, relays,
# the APNs sandbox or child processes, and the clients and servers of the network stack.
INTEGRATION_MARKERS = [
    "GatewayHarness", "TestDatabase", "ChildProcess", "RelayFixture", "SandboxFixture", "GatewayProcess",
    "RustNostrPeer.run", "RustNostrPeer.call", "RustNostrPeer.python", "PostgresClient(", "app.test(", "HTTPClient(", "ServerBootstrap",
    "ClientBootstrap", "HostileRelay", "builtProduct", "SandboxServer(", "RelayConnection(", "RelayPool(", "Process(",
]

# A top-level type (its attributes, such as `@Suite(.serialized)`, may lead the line): suites and
# XCTestCase classes are top-level here, and a nested suite runs under its parent's name.
SUITE = re.compile(r"^(?:@\w+(?:\([^\n]*?\))?\s+)*(?:(?:public|final)\s+)*(?:struct|class|enum)\s+(\w+)", re.MULTILINE)


def test_targets():
    return sorted(path for path in TESTS.iterdir() if path.is_dir() and path.name.endswith("Tests"))


def check() -> int:
    problems = []
    for target in test_targets():
        for path in sorted(target.rglob("*.swift")):
            relative = path.relative_to(target)
            if relative.parts[0] not in KINDS or len(relative.parts) < 2:
                problems.append(f"{path.relative_to(ROOT)}: not in {target.name}/Unit, /Integration or /Support")
                continue
            if relative.parts[0] == "Unit":
                text = path.read_text()
                for marker in INTEGRATION_MARKERS:
                    if marker in text:
                        problems.append(f"{path.relative_to(ROOT)}: a unit test uses {marker}; move it to Integration/")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"tests live by kind ({len(test_targets())} targets)")
    return 0


def unit_filter() -> str:
    suites = []
    for target in test_targets():
        for path in sorted((target / "Unit").rglob("*.swift")):
            text = path.read_text()
            if "@Test" in text or "XCTestCase" in text:
                suites += [f"{target.name}\\.{name}" for name in SUITE.findall(text)]
    return "^(" + "|".join(suites) + ")/"


if __name__ == "__main__":
    if sys.argv[1:] == ["--filter"]:
        print(unit_filter())
        sys.exit(0)
    sys.exit(check())
