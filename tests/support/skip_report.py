#!/usr/bin/env python3
"""The suite's skips, out loud: reads CTest's JUnit files (ctest --output-junit),
prints every test CTest marked Skipped with the reasons its output gives, and
exits 1 if a reason is not one the allow-list names. scripts/test.sh installs
every tool the suite uses, so on a machine of ours the only skips left are the
ones no CI machine can avoid (no GPU); a skip for a missing tool, a missing
privilege or an unreachable index there is a failure, not a quiet pass.

usage: skip_report.py ALLOWED_SKIPS JUNIT.xml...
ALLOWED_SKIPS: one 'regular expression<TAB>why it may skip' a line, '#' comments."""
import re
import sys
import xml.etree.ElementTree as ET

# Lines that carry a reason: the suite's gtest main lists each skipped test
# (tests/support/skip_aware_main.cpp); scripts print "...SKIPPED: why" or
# "[  SKIPPED ] why". gtest's own "[  SKIPPED ] Suite.Test (0 ms)" and
# "[  SKIPPED ] 3 tests, listed below:" name tests, not reasons.
MAIN = re.compile(r"\[skip-aware-main\] skipped (\S+): (.*)")
SCRIPT = re.compile(r"SKIPPED\s*\]?:?\s+(.*)")
GTEST_NAME = re.compile(r"^\[  SKIPPED \] (\S+\.\S+( \(\d+ ms\))?|\d+ tests?, listed below:)$")


# gtest colours its lines even into a pipe at times; CTest's JUnit writes the
# escape character as this marker
COLOUR = re.compile(r"(\[NON-XML-CHAR-0x1B\]|\x1b)\[[0-9;]*m")


def reasons(output):
    """The distinct reasons in a test's output, each with the gtest tests that gave
    it (a set: every MPI rank prints the same list)."""
    found = {}
    for line in output.splitlines():
        line = COLOUR.sub("", line).strip()
        m = MAIN.search(line)
        if m:
            why = re.sub(r"^SKIPPED:?\s*", "", m.group(2))
            found.setdefault(why, set()).add(m.group(1))
            continue
        if "SKIPPED" in line and not GTEST_NAME.match(line):
            m = SCRIPT.search(line)
            if m and m.group(1) and m.group(1) not in found:
                found[m.group(1)] = set()
    return found or {"(no reason printed)": set()}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    allowed = []
    for line in open(sys.argv[1]):
        if line.strip() and not line.startswith("#"):
            pattern, _, why = line.rstrip("\n").partition("\t")
            allowed.append((re.compile(pattern), why))
    skipped = []
    for path in sys.argv[2:]:
        for case in ET.parse(path).getroot().iter("testcase"):
            if case.find("skipped") is None:
                continue
            out = case.find("system-out")
            skipped.append((path, case.get("name"), reasons(out.text if out is not None and out.text else "")))
    bad = 0
    print(f"[skips] {len(skipped)} test(s) skipped:")
    for path, name, why in skipped:
        for r, tests in why.items():
            n = len(tests)
            ok = next((w for p, w in allowed if p.search(r)), None)
            bad += ok is None
            verdict = f"allowed: {ok}" if ok else "NOT ALLOWED"
            count = f" ({n} gtest tests)" if n > 1 else ""
            print(f"[skips]   {name}{count}: {r}  [{verdict}]")
    if bad:
        print(f"[skips] {bad} skip reason(s) not on the allow-list ({sys.argv[1]}): "
              "install what the test needs, or say on the list why it may skip")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
