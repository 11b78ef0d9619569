#!/usr/bin/env python3
"""Config keys named in README.md and docs/*.md are keys of the schema (issue 34:
docs/gpu.md offered `reduce_dtype: fp16`, which the key refuses).

docs/configuration.md is generated from the schema (strata-config-docs) and
test_config (ConfigDocs) keeps it equal to it, so its table is the schema here.
In every code span of the other pages, outside fenced code blocks, a dotted name
whose first part is a config section (`data.cache_dir`, `trainer.max_steps=100`)
must be a key of the table, or a group of keys (`data.s3`); an enum key given a
value (`key: value`, `key=value`) must be given one of its choices. Names of files
(`trainer.h`) and calls (`model.named_parameters()`) are not keys and are skipped.

  check_config_keys.py REPO_ROOT [FILE.md ...]   (default: README.md and docs/*.md)
Exit status 1 names each offender as PAGE:LINE: SPAN: why.
"""
import pathlib
import re
import sys

ROW = re.compile(r"^\| `([a-z_0-9.]+)` \| ((?:[^|\\]|\\.)*) \| `([^`]*)` \|", re.M)
SPAN = re.compile(r"(`+)(.+?)\1")
# a dotted name not inside a path or a longer name, not a call, with an optional value
NAME = re.compile(r"(?<![\w./-])([a-z_]+(?:\.[a-z_0-9]+)+)(?![\w(/])(?:\s*[:=]\s*([^\s,;)]+))?")
FILE_EXT = {"md", "h", "cpp", "py", "sh", "yaml", "json", "cu", "cuh", "txt", "h5", "png", "log", "jsonl"}


def config_table(root):
    """docs/configuration.md's keys: key -> (enum choices or None, default)."""
    table = {}
    for m in ROW.finditer((root / "docs" / "configuration.md").read_text(encoding="utf-8")):
        kind = m.group(2).replace("\\|", "|")
        choices = [c.strip() for c in kind[len("enum:"):].split("|")] if kind.startswith("enum:") else None
        table[m.group(1)] = (choices, m.group(3))
    return table


def schema(root):
    return {key: choices for key, (choices, _) in config_table(root).items()}


def check_page(root, page, keys, sections, seen):
    bad, fence = [], None
    for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
        f = re.match(r"^\s*(`{3,}|~{3,})", line)
        if f:
            fence = f.group(1)[0] if fence is None else None
            continue
        if fence is not None:
            continue
        for sm in SPAN.finditer(line):
            span = sm.group(2)
            for m in NAME.finditer(span):
                path, value = m.group(1), m.group(2)
                if path.split(".")[0] not in sections or path.rsplit(".", 1)[1] in FILE_EXT:
                    continue
                where = f"{page.relative_to(root)}:{n}: `{span}`"
                seen.append(path)
                if path not in keys:
                    if not any(k.startswith(path + ".") for k in keys):
                        bad.append(f"{where}: {path} is not a config key (docs/configuration.md)")
                    continue
                if value and keys[path] and value.strip("'\"") not in keys[path]:
                    bad.append(f"{where}: {path} takes {' | '.join(keys[path])}, not {value}")
    return bad


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    keys = schema(root)
    if len(keys) < 50:
        print(f"check_config_keys: only {len(keys)} keys read from docs/configuration.md: its table changed form")
        return 1
    sections = {k.split(".")[0] for k in keys if "." in k}
    pages = [pathlib.Path(p).resolve() for p in sys.argv[2:]] or \
        [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name != "configuration.md")
    bad, seen = [], []
    for page in pages:
        bad += check_page(root, page, keys, sections, seen)
    for b in bad:
        print(b)
    print(f"check_config_keys: {len(keys)} keys in the schema; {len(seen)} mentions of "
          f"{len(set(seen))} names on {len(pages)} pages; {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
