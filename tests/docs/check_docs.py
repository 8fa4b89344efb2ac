#!/usr/bin/env python3
"""Checks the Markdown reference (README.md, docs/*.md) for the defects no reader reports:

- a file over MAX_BYTES (a script that wrote a paragraph between every character once grew
  docs/ci.md from 7 KB to 7.9 MB);
- a paragraph of MIN_REPEAT characters or more that appears twice in one file;
- a relative link to a file that does not exist.

Usage: check_docs.py ROOT    checks ROOT's README.md and docs/*.md
       check_docs.py --self-test    plants each defect and checks that it is found
Exit 0 when clean, 1 listing each defect, one per line.
"""
import pathlib
import re
import sys
import tempfile

MAX_BYTES = 200_000
MIN_REPEAT = 200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def paragraphs(text):
    """Blank-line separated blocks outside fenced code (code may repeat on purpose)."""
    blocks, current, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            current = []
            continue
        if fenced:
            continue
        if line.strip():
            current.append(line.strip())
        elif current:
            blocks.append(" ".join(current))
            current = []
    if current and not fenced:
        blocks.append(" ".join(current))
    return blocks


def check_file(path):
    problems = []
    size = path.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"{path}: {size} bytes, over {MAX_BYTES}")
        return problems  # the checks below would only repeat the same damage
    text = path.read_text(encoding="utf-8")
    seen = set()
    for block in paragraphs(text):
        if len(block) < MIN_REPEAT:
            continue
        if block in seen:
            problems.append(f"{path}: paragraph repeated: {block[:60]}...")
        seen.add(block)
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same file
        file_part = target.split("#", 1)[0]
        if file_part and not (path.parent / file_part).exists():
            problems.append(f"{path}: link to a missing file: {target}")
    return problems


def check_tree(root):
    root = pathlib.Path(root)
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    problems = []
    for path in files:
        problems += check_file(path)
    return problems


def self_test():
    paragraph = "A sentence long enough to count as a paragraph of reference text. " * 4
    plants = {
        "too large": "x" * (MAX_BYTES + 1),
        "repeated": f"{paragraph}\n\n{paragraph}\n",
        "missing file": "See [the run](../bench/results/no-such-run.md).\n",
    }
    for name, text in plants.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "docs").mkdir()
            (root / "README.md").write_text("# Title\n\nSee [docs](docs/page.md#top).\n")
            (root / "docs" / "page.md").write_text("# Page\n")
            if check_tree(root):
                print(f"self-test: a clean tree reports defects ({name})")
                return 1
            (root / "docs" / "bad.md").write_text(text)
            if not check_tree(root):
                print(f"self-test: the planted defect '{name}' was not found")
                return 1
    print("self-test: every planted defect found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check_tree(argv[1])
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
