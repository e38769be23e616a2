#!/usr/bin/env python3
"""Package.swift declares exactly what each target imports.

The compiler (MemberImportVisibility) makes every file import the modules whose members it uses;
this holds the manifest to those imports, both ways: a module imported but not declared builds
only by the accident of another target's dependency, and one declared but never imported is a
stale dependency. Reads the manifest through `swift package dump-package`, so it sees exactly
what SwiftPM sees.
  scripts/lint_imports.py            # the root package
  scripts/lint_imports.py Fuzz       # another package directory
"""
import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the platform SDKs (Security: the Keychain, on Apple platforms only),
# never declared in a manifest.
TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch",
             "Synchronization", "_Concurrency", "Testing", "XCTest", "RegexBuilder", "os", "Security"}
IMPORT = re.compile(r"^\s*(?:@[\w]+(?:\([^)]*\))?\s+)*(?:public |package |internal |fileprivate |private )?"
                    r"import (?:class |struct |enum |func |protocol |typealias |var |let )?(\w+)", re.M)


def declared(target):
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def imported(directory):
    modules = set()
    for root, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(root, name), encoding="utf-8") as source:
                    modules.update(IMPORT.findall(source.read()))
    return modules - TOOLCHAIN


def main():
    package = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    manifest = json.loads(subprocess.run(["swift", "package", "--package-path", package, "dump-package"],
                                         check=True, capture_output=True, text=True).stdout)
    problems = []
    for target in manifest["targets"]:
        if target["type"] == "system":
            continue
        default = "Tests" if target["type"] == "test" else "Sources"
        directory = os.path.join(package, target.get("path") or os.path.join(default, target["name"]))
        uses, declares = imported(directory), declared(target)
        for module in sorted(uses - declares):
            problems.append(f"{target['name']}: imports {module} but Package.swift does not declare it")
        for module in sorted(declares - uses):
            problems.append(f"{target['name']}: Package.swift declares {module} but no file imports it")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"Package.swift and the imports agree ({len(manifest['targets'])} targets)")


if __name__ == "__main__":
    main()
