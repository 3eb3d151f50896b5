"""The README's tour runs as written, and the docs name files and commands that exist.

Each ``sh`` block of README.md runs in a folder laid out like a fresh clone
after ``make run`` (its ``scenarios/`` and ``.venv``), one bash script per
block with ``set -e``, so a command that fails or a file that moved fails the
test. ``python`` blocks run with the venv's interpreter in the same kind of
folder. Lines that are the set-up itself (``make run``, ``make test``) or need
root (``sudo ...``) are not run; each becomes a skipped test naming why.

The docs pages' commands are not run (many need root, minutes or a cluster);
their ``latlab`` subcommands must exist, and every repository path they name
must exist, so a renamed module or command fails here rather than in a
reader's shell.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
VENV = REPO / ".venv"

# What a fresh clone after `make run` has that the tour uses.
CLONE_ENTRIES = ("scenarios", ".venv")

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)

SKIP_REASONS = {
    "make": "the set-up command itself (make run builds what this test uses; make test runs this test)",
    "sudo": "needs root and /dev/net/tun (covered by tests/python/test_run_emulate.py where available)",
}


@dataclass(frozen=True)
class Block:
    """One runnable README block, or one command line skipped with its reason."""

    ident: str
    lang: str
    text: str
    skip_reason: str | None = None


def _logical_lines(text: str) -> list[str]:
    """Shell lines with backslash continuations joined."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _skip_reason(line: str) -> str | None:
    words = line.split()
    return SKIP_REASONS.get(words[0]) if words else None


def readme_blocks(text: str) -> list[Block]:
    """The README's sh and python blocks, in order, with skipped lines split out."""
    blocks: list[Block] = []
    for n, match in enumerate(FENCE.finditer(text)):
        lang, body = match.group(1), match.group(2)
        if lang == "python":
            blocks.append(Block(f"block{n}-python", lang, body))
        if lang != "sh":
            continue
        run: list[str] = []
        for line in _logical_lines(body):
            reason = _skip_reason(line)
            if reason is None:
                run.append(line)
            else:
                blocks.append(Block(f"block{n}-{line.split()[0]}", lang, line, reason))
        if any(line.strip() and not line.lstrip().startswith("#") for line in run):
            blocks.append(Block(f"block{n}-sh", lang, "\n".join(run)))
    return blocks


BLOCKS = readme_blocks(README.read_text())


def _fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in CLONE_ENTRIES:
        (clone / name).symlink_to(REPO / name)
    return clone


def test_readme_has_the_tour():
    """The four tour steps are there to run: a run, a sweep, a study, an emulated run."""
    scripts = "\n".join(b.text for b in BLOCKS)
    for command in ("latlab run ", "latlab sweep ", "latlab reproduce ", "--emulate"):
        assert command in scripts, command
    assert len(README.read_text().splitlines()) <= 250


@pytest.mark.parametrize("block", BLOCKS, ids=[b.ident for b in BLOCKS])
def test_readme_block_runs_as_written(block: Block, tmp_path: Path):
    if block.skip_reason is not None:
        pytest.skip(f"{block.text.strip()!r}: {block.skip_reason}")
    if not (VENV / "bin" / "latlab").exists():
        pytest.skip("the venv is not built (make run)")
    clone = _fresh_clone(tmp_path)
    if block.lang == "python":
        argv = [str(VENV / "bin" / "python"), "-c", block.text]
    else:
        argv = ["bash", "-c", "set -euo pipefail\n" + block.text]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    done = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"{block.text}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    assert "Traceback" not in done.stderr, done.stderr


# ----- the docs pages: commands and paths that exist ---------------------------------------


def _doc_pages() -> list[Path]:
    """README and the hand-written docs pages (study reports are generated, checked by studies)."""
    pages = [README, *sorted(DOCS.rglob("*.md"))]
    return [p for p in pages if p.name != "report.md"]


def _latlab_invocations(page: Path) -> list[list[str]]:
    """`latlab ...` command lines of a page's sh blocks, as argument lists after `latlab`."""
    found = []
    for match in FENCE.finditer(page.read_text()):
        if match.group(1) != "sh":
            continue
        for line in _logical_lines(match.group(2)):
            words = shlex.split(line, comments=True)
            if words and words[0] == "sudo":
                words = words[1:]
            if words and Path(words[0]).name == "latlab":
                found.append(words[1:])
    return found


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_docs_commands_exist(page: Path):
    from latlab.cli import cli  # conftest puts python/ on sys.path

    for args in _latlab_invocations(page):
        command = cli
        for word in args:
            if word.startswith("-") or not hasattr(command, "get_command"):
                break
            sub = command.get_command(None, word)  # type: ignore[arg-type]
            if sub is None:
                # A positional argument of the command reached so far, unless that is a group.
                assert command is not cli, f"{page.name}: 'latlab {word}' is not a command"
                break
            command = sub


REPO_PATH = re.compile(r"(?<![\w/.-])((?:crates|python|benches|tests|scenarios)/[\w./-]*\w)")


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_docs_paths_exist(page: Path):
    named = {m.group(1) for m in REPO_PATH.finditer(page.read_text())}
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {missing}"


def test_docs_index_lists_every_page():
    """docs/index.md links every page under docs/, so none is only reachable by search."""
    index = DOCS / "index.md"
    linked = {
        (index.parent / target).resolve()
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", index.read_text())
    }
    pages = {p.resolve() for p in DOCS.rglob("*.md")} - {index.resolve()}
    missing = sorted(str(p.relative_to(DOCS)) for p in pages - linked)
    assert not missing, f"docs/index.md does not list: {missing}"
