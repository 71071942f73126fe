#!/usr/bin/env python3
"""scripts/doc-links.py: no broken relative link or anchor in README.md and docs/.

Every Markdown link that is not a URL (`[text](path)`, `[text](path#anchor)`,
`[text](#anchor)`) must name a file or directory of the repository, and its anchor a
heading of that file, as GitHub makes anchors of headings (lowercase, punctuation
dropped, spaces to hyphens, `-1`, `-2` for repeats). Links in code blocks and code spans
are not links. Prints each broken one as file:line: link: why; exits 1 if any.

Usage: scripts/doc-links.py [FILE_OR_DIR ...]
       (default: README.md docs bench/runs/README.md lab/runs/README.md)
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str):
    """(line number, line, line with code spans blanked) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = stripped[:3]
            continue
        yield n, line, re.sub(r"`+[^`]*`+", lambda m: " " * len(m.group(0)), line)


def slug(heading: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: pathlib.Path) -> set:
    found, seen = set(), {}
    for _, line, _ in prose_lines(path.read_text()):
        m = HEADING.match(line)
        if not m:
            continue
        s = slug(m.group(2))
        count = seen.get(s, 0)
        seen[s] = count + 1
        found.add(s if count == 0 else f"{s}-{count}")
    return found


def broken(path: pathlib.Path) -> list:
    problems = []
    cache = {}
    for n, _, line in prose_lines(path.read_text()):
        for target in [m.group(1) for m in LINK.finditer(line)] + IMAGE.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(REPO)}:{n}: ({target})"
            if not dest.exists():
                problems.append(f"{where}: {file_part} does not exist")
                continue
            if anchor and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    problems.append(f"{where}: no heading makes #{anchor} in {dest.relative_to(REPO)}")
    return problems


def markdown_files(args: list) -> list:
    files = []
    for a in args or ["README.md", "docs", "bench/runs/README.md", "lab/runs/README.md"]:
        p = REPO / a
        files += sorted(p.rglob("*.md")) if p.is_dir() else [p]
    return files


def main(argv: list) -> int:
    problems = [p for f in markdown_files(argv[1:]) for p in broken(f)]
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
