#!/usr/bin/env python3
"""Every environment variable strata's programs read is in docs/environment.md
(issue 34: docs/launch.md listed three of the ten STRATA_* variables the code
reads, and none of the AWS_* ones).

The programs' C++ (apps, base, core, data, distributed, kernels, models, nn,
train, bench, include; not tests/) names a variable it reads as a string
literal: getenv("STRATA_CACHE_DIR"), env("AWS_REGION"), a constant such as
kDataKeyFileEnv = "STRATA_DATA_KEY_FILE". Each literal that is exactly a
STRATA_*, AWS_* or S3_* name must appear in a code span of
docs/environment.md. The scripts' variables are documented there too, but not
checked: scripts come and go with their own headers.

  check_env_vars.py REPO_ROOT
Exit status 1 names each variable the page lacks, with a file that reads it.
"""
import pathlib
import re
import sys

DIRS = ["apps", "base", "core", "data", "distributed", "kernels", "models", "nn", "train", "bench", "include"]
SUFFIXES = {".cpp", ".h", ".cu", ".cuh"}
LITERAL = re.compile(r'"((?:STRATA|AWS|S3)_[A-Z0-9_]+)"')
SPAN = re.compile(r"(`+)(.+?)\1")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    read = {}
    for d in DIRS:
        for path in sorted((root / d).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                for name in LITERAL.findall(path.read_text(encoding="utf-8", errors="replace")):
                    read.setdefault(name, path.relative_to(root))
    page = root / "docs" / "environment.md"
    documented = set()
    for line in page.read_text(encoding="utf-8").split("\n"):
        for m in SPAN.finditer(line):
            documented.update(re.findall(r"[A-Z][A-Z0-9_]+", m.group(2)))
    missing = sorted(n for n in read if n not in documented)
    for n in missing:
        print(f"docs/environment.md: {n} is read by {read[n]} but not documented")
    print(f"check_env_vars: {len(read)} variables read by the programs, {len(missing)} missing from docs/environment.md")
    return 1 if missing or not read else 0


if __name__ == "__main__":
    sys.exit(main())
