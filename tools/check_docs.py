#!/usr/bin/env python3
"""Checks that the C++ in README.md and docs/*.md is code that compiles.

Each ```cpp block must be preceded by a line `<!-- from examples/NAME/main.cc -->` naming a file
that CI builds, and its lines must appear in that file, in order and contiguous (leading
indentation aside). Prints every block that does not and exits 1; run by ctest as check_docs.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = re.compile(r"<!--\s*from\s+(\S+)\s*-->")


def normalized(lines):
    return [line.strip() for line in lines if line.strip()]


def contains(haystack, needle):
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def check(doc):
    problems = []
    lines = doc.read_text().splitlines()
    source = None
    i = 0
    while i < len(lines):
        match = SOURCE.search(lines[i])
        if match:
            source = match.group(1)
        if lines[i].strip() in ("```cpp", "```c++"):
            start = i + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            where = f"{doc.relative_to(ROOT)}:{i + 1}"
            block = normalized(lines[start:end])
            if source is None:
                problems.append(f"{where}: a cpp block without a `<!-- from FILE -->` line above")
            elif not (ROOT / source).is_file():
                problems.append(f"{where}: {source} does not exist")
            elif not contains(normalized((ROOT / source).read_text().splitlines()), block):
                problems.append(f"{where}: the block is not a contiguous excerpt of {source}")
            source = None
            i = end
        i += 1
    return problems


def main():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    problems = [p for doc in docs for p in check(doc)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
