"""The commands README.md and docs/ show: every `$ ` line of their ```console blocks, with the
output shown under it and what the comments before the block say (`<!-- exit: N -->`,
`<!-- not-run: why -->`). services/test_documented_commands.py runs them; unit/ checks the set."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trace_assets_tests.support.helpers import PROJECT_DIR

DOCS = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<why>.+?)\s*-->")
EXIT = re.compile(r"<!--\s*exit:\s*(?P<codes>[\d ]+?)\s*-->")


@dataclass(frozen=True)
class Command:
    doc: str  # relative to the project
    line: int
    text: str
    output: tuple[str, ...] = ()
    exit_code: int = 0
    not_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def documented_commands(path: Path) -> list[Command]:
    """The `$ ` commands of every ```console block, with what the comments before it say."""
    doc = path.relative_to(PROJECT_DIR).as_posix()
    lines = path.read_text().splitlines()
    commands: list[Command] = []
    not_run: str | None = None
    codes: list[int] = []
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if found := NOT_RUN.fullmatch(line):
            not_run = found["why"]
        elif found := EXIT.fullmatch(line):
            codes = [int(code) for code in found["codes"].split()]
        elif line == "```console":
            block: list[tuple[int, str, list[str]]] = []
            index += 1
            while lines[index].strip() != "```":
                if lines[index].startswith("$ "):
                    block.append((index + 1, lines[index][2:], []))
                elif lines[index].strip():
                    assert block, f"{doc}:{index + 1}: output before any command"
                    block[-1][2].append(lines[index])
                index += 1
            assert len(codes) in (0, 1, len(block)), f"{doc}:{index}: one exit status, or one per command"
            for position, (number, text, output) in enumerate(block):
                code = codes[position] if len(codes) == len(block) else (codes[0] if codes else 0)
                commands.append(Command(doc, number, text, tuple(output), code, not_run))
            not_run, codes = None, []
        elif line and not line.startswith("<!--"):
            not_run, codes = None, []
        index += 1
    return commands


ALL_COMMANDS = [command for path in DOCS for command in documented_commands(path)]
