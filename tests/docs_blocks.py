"""The code blocks of README.md and docs/*.md, and what each one is, for the docs tests.

Every code block (fenced, or indented by four spaces) is preceded by a marker line saying how a test
runs it, so that no command or example in the docs can drift from what the package does:

    <!-- docs-test: KIND [flag ...] [key=value ...] -->

KIND is one of:
  cpu       each line is a shell command; tests/unit/test_docs.py runs it (cwd a scratch folder holding
            examples/ and benchmarks/, its own TRT_KERNELS_CACHE_DIR) and expects exit status 0 and no
            traceback: a ``trt-kernels`` line whose words the shell passes on unchanged in the test process
            (the CLI's main), any other line by bash (``needs=triton``: skipped where triton is not installed)
  gpu       each line is a shell command run by tests/gpu/test_docs_gpu.py (status 0); ``cpu-rc=N``: also
            run on the CPU tier, where it must exit with N and no traceback
  collect   pytest commands: run with ``--collect-only`` (from the repository root), each must select tests
  python    a Python block; ``name=``, ``after=NAME`` (that block's code runs first), ``prelude=triton``
            (imports), ``gpu`` (run by the GPU tier instead of the CPU one); the CPU tier runs each block as
            ``__main__`` in one child process for all of them
  error     the message a declaration raises: the ``after=`` block's code with its lines containing
            ``drop=`` removed must raise it (lines ending in ``...`` are prefixes)
  fragment  Python lines that all appear in ``file=`` (an example the tests run)
  synopsis  command syntax: each subcommand's ``--help`` must name every option shown
  output    a session pasted from a real run: each ``$ `` command must be one the tests run
  pip       install commands: not run here (the network); the extras they name must exist and .ci/run
            must install the test extra
  device    runs on the GPU machine through the device tool (``bash .ci/gpu``): checked to parse
  text      not a command (a layout, a calling convention)
"""

import dataclasses
import pathlib
import re
import shlex

ROOT = pathlib.Path(__file__).resolve().parents[1]
KINDS = {"cpu", "gpu", "collect", "python", "error", "fragment", "synopsis", "output", "pip", "device", "text"}
MARKER = re.compile(r"^<!-- docs-test: (?P<body>[^>]*?) -->$")


@dataclasses.dataclass
class Block:
    path: str          # relative to the repository root
    line: int          # 1-based line of the block's first line
    text: str
    kind: str = ""
    flags: frozenset = frozenset()
    opts: dict = dataclasses.field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def commands(self):
        """The block's command lines (blank lines and whole-line comments left out)."""
        return [ln.strip() for ln in self.text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def doc_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _parse_marker(body: str):
    words = shlex.split(body)
    kind, rest = (words[0], words[1:]) if words else ("", [])
    flags = frozenset(w for w in rest if "=" not in w)
    opts = dict(w.split("=", 1) for w in rest if "=" in w)
    return kind, flags, opts


def blocks(files=None):
    """Every code block of the docs, with its marker (kind "" where there is none)."""
    out = []
    for path in files or doc_files():
        lines = path.read_text().split("\n")
        rel = str(path.relative_to(ROOT))
        i = 0
        while i < len(lines):
            line = lines[i]
            prev = lines[i - 1] if i else ""
            if line.startswith("```"):
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                block = Block(rel, i + 2, "\n".join(lines[i + 1:j]) + "\n")
                end = j + 1
            elif line.startswith("    ") and line.strip() and (not prev.strip() or MARKER.match(prev)):
                j = i
                while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                    j += 1
                block = Block(rel, i + 1, "\n".join(ln[4:] for ln in lines[i:j]).rstrip("\n") + "\n")
                end = j
            else:
                i += 1
                continue
            m = MARKER.match(prev)
            if m:
                block.kind, block.flags, block.opts = _parse_marker(m.group("body"))
            out.append(block)
            i = end
    return out


def named(all_blocks, name):
    found = [b for b in all_blocks if b.opts.get("name") == name]
    assert len(found) == 1, f"docs: {len(found)} blocks named {name!r}"
    return found[0]


def program(all_blocks, block) -> str:
    """The Python a ``python`` block runs: its prelude, the ``after=`` chain, then its own code."""
    chain = []
    b = block
    while "after" in b.opts:
        b = named(all_blocks, b.opts["after"])
        chain.insert(0, b.text)
    prelude = {"triton": "import torch\nimport triton\nimport triton.language as tl\nimport trt_kernels as ttk\n"}
    return prelude.get(block.opts.get("prelude"), "") + "\n".join(chain) + "\n" + block.text


INLINE = re.compile(r"`((?:trt-kernels|python|python3|bash) [^`]+)`")


def inline_commands(files=None):
    """Commands quoted inline in the prose (``trt-kernels ...``, ``python ...``, ``bash ...``)."""
    out = []
    for path in files or doc_files():
        text = path.read_text()
        for m in INLINE.finditer(text):
            out.append((f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)))
    return out
