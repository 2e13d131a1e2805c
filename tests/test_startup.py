"""``spillscope grep`` starts light: what a run imports, not how long it takes (issue 26).

The time is measured in bench/startup.py and recorded in docs/benchmarks.md; a timed test
would only be flaky. What decides the time is the import graph, and that can be asserted:
each run below happens in a fresh interpreter (``python -m spillscope``, as a user runs it),
which reports the modules it ended with. A module listed here as never loaded is one a
grep of a root with nothing to search has no use for: the TUI and its libraries, the S3
client, the verify pass, the stats, the session-log reader, the other commands, and the
implementation of any agent whose tree this is not (detection reads names only).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import UPSTREAM

CLAUDE = Path(__file__).parent / "fixtures" / "claude" / "projects"

#: Runs the CLI as ``python -m spillscope`` does, then reports the exit status and modules
#: (atexit: after main() returned and its SystemExit is on its way).
_RUN = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["spillscope", *sys.argv[1:]]
runpy.run_module("spillscope", run_name="__main__", alter_sys=True)
"""

#: Never loaded by a grep of a root with nothing to search (a prefix covers its submodules).
NEVER = (
    # Front ends and heavy libraries: the TUI, the notebook, the browser server, S3.
    "textual", "rich", "textual_plotext", "textual_serve", "watchfiles", "boto3", "botocore", "fsspec", "humanize",
    "zstandard", "sqlite3", "asyncio", "logging", "hashlib",
    # The real inspect (with ast, dis, tokenize): ``dataclasses`` imports it for the docstring
    # of a record that has none (ours all have one), and the CLI puts in a stand-in for it.
    "ast", "dis", "tokenize",
    # JSON is encoded or decoded by orjson (bound lazily, util/lazy.py) only when there is some.
    "orjson",
    "spillscope.frontends.tui", "spillscope.frontends.notebook", "spillscope.frontends.serve", "spillscope.frontends.demo",
    # The other commands' bodies (agents.py: the commands on another agent's tree), and the
    # listing ls builds (grep lists nothing).
    "spillscope.frontends.cli.agents", "spillscope.inspect.scan.listing", "spillscope.frontends.cli.inspect_cmds", "spillscope.frontends.cli.stats", "spillscope.frontends.cli.tui_cmds",
    "spillscope.frontends.cli.cat", "spillscope.frontends.cli.prune", "spillscope.frontends.cli.watch",
    "spillscope.frontends.cli.progress",
    # The inspector beyond the scan and the search: verify, links, logs, stats, watch.
    "spillscope.inspect.verify", "spillscope.inspect.link", "spillscope.inspect.logs", "spillscope.inspect.watch",
    "spillscope.inspect.stats.model", "spillscope.inspect.stats.builder", "spillscope.inspect.stats.dsh",
    # What a search loads only with something to search: the searchers and the seen ranges
    # (the notice checker, the transcript codec and the session-log reader under them).
    "spillscope.inspect.search.seen", "spillscope.inspect.search.transcript", "spillscope.inspect.search.tool",
    "spillscope.reference", "spillscope.formats.sessionlog", "spillscope.formats.transcript.parser",
    "spillscope.formats.transcript.reader", "spillscope.spill.policy", "spillscope.spill.trust",
    # Every agent's implementation: on a dsh root detection reads names (probe.py) only, and
    # needs none of the records an inspection returns.
    "spillscope.dialects.records", "spillscope.dialects.engine", "spillscope.dialects.checks", "spillscope.dialects.search",
    *(f"spillscope.dialects.{agent}.{part}" for agent in ("claude", "gemini", "qwen", "opencode")
      for part in ("layout", "notice", "verify", "retention")),
)


def run(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {k: v for k, v in os.environ.items() if k != "SPILLSCOPE_S3_TIMEOUT"}
    proc = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, timeout=120, env=env)
    head, sep, listed = proc.stderr.rpartition("\nMODULES ")
    assert sep, proc.stderr
    proc.stderr = head
    return proc, set(json.loads(listed))


def loaded(modules: set[str], names: tuple[str, ...] | list[str]) -> list[str]:
    """The names of ``names`` loaded, or with a submodule loaded."""
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("options", [[], ["-E"], ["-i", "--json"]], ids=["fixed", "regex", "ignore-case-json"])
def test_grep_on_an_empty_root_imports_only_what_it_uses(tmp_path: Path, options: list[str]) -> None:
    proc, modules = run("grep", *options, "x", str(tmp_path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")  # no hit: exit 1, nothing said
    # It did run the grep (a run that stopped early would import little and pass).
    assert {"spillscope.frontends.cli.grep", "spillscope.inspect.search.root", "spillscope.inspect.scan.tree",
            "spillscope.dialects.dsh"} <= modules
    assert loaded(modules, NEVER) == []


def test_grep_on_a_dsh_root_with_a_session_imports_no_other_agent(tmp_path: Path) -> None:
    session = tmp_path / "session-0123456789ab"
    session.mkdir()
    (session / "0123456789ab-tool.txt").write_text("no match here\n")
    proc, modules = run("grep", "absent", str(tmp_path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    (session / "0123456789ab-tool.txt").write_text("the needle is here\n")
    proc, modules = run("grep", "needle", str(tmp_path))
    assert proc.returncode == 0 and "[[needle]]" in proc.stdout, proc
    assert "spillscope.inspect.search.tool" in modules  # there was something to search this time
    # With no logs nothing links a hit: the seen ranges (and the notice checker) never load.
    assert loaded(modules, ["spillscope.inspect.search.seen", "spillscope.reference.check"]) == []
    agents = [n for n in NEVER if n.startswith("spillscope.dialects.")] + ["spillscope.inspect.verify"]
    assert loaded(modules, agents) == []


@pytest.mark.parametrize("options", [[], ["--json"], ["-i", "--json"]], ids=["human", "json", "ignore-case"])
def test_a_grep_with_hits_in_transcripts_and_tool_outputs_imports_no_orjson(tmp_path: Path, options: list[str]) -> None:
    """orjson's import is 6.5 ms of CPU: a search that parses a transcript's metadata block,
    decodes its hits' context and writes them (JSON lines too) does it with the stdlib."""
    root = tmp_path / "root"
    shutil.copytree(UPSTREAM / "spill-root", root)
    proc, modules = run("grep", *options, "e", str(root))
    assert proc.returncode == 0 and proc.stdout.count("session-reference") > 10, proc.stderr
    assert "spillscope.inspect.search.transcript" in modules and "spillscope.formats.transcript.parser" in modules
    assert "orjson" not in modules


def test_detection_imports_only_the_detected_agents_implementation(tmp_path: Path) -> None:
    tree = tmp_path / "projects"
    shutil.copytree(CLAUDE, tree)
    proc, modules = run("grep", "-m", "1", "the", str(tree))
    assert proc.returncode == 0 and proc.stdout, proc.stderr
    assert "spillscope.dialects.claude.layout" in modules
    others = [f"spillscope.dialects.{agent}.{part}" for agent in ("gemini", "qwen", "opencode") for part in ("layout", "notice")]
    assert loaded(modules, others) == []


def test_the_parser_is_built_without_any_command(tmp_path: Path) -> None:
    """``--help`` of a command builds the whole parser and runs no command: it imports none."""
    proc, modules = run("stats", "--help")
    assert proc.returncode == 0 and "--table" in proc.stdout, proc.stderr
    commands = ["spillscope.frontends.cli." + m for m in ("adapters", "agents", "grep", "inspect_cmds", "stats", "tui_cmds",
                                                          "cat", "prune", "watch", "progress")]
    assert loaded(modules, commands) == []
    assert loaded(modules, NEVER) == []


def test_a_deferred_module_is_the_module_from_its_first_use() -> None:
    """util.lazy.deferred_module (how util.text and the CLI's output bind orjson): the first
    attribute read imports the module and rebinds the name, also from threads at once."""
    import json
    import threading

    from spillscope.util.lazy import deferred_module

    namespace: dict[str, object] = {}
    namespace["json"] = stand_in = deferred_module("json", namespace)
    assert namespace["json"] is stand_in and not isinstance(stand_in, type(json))
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(getattr(namespace["json"], "dumps"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [json.dumps] * 8
    assert namespace["json"] is json
    with pytest.raises(ModuleNotFoundError):
        deferred_module("spillscope_no_such_module", {}).anything  # noqa: B018


_STAND_IN = """
import importlib.util, sys, threading
from spillscope.util.lazy import stand_in
stand_in("fractions")
import fractions
bound = fractions  # what a module that imported it before its first use holds
assert "decimal" not in sys.modules and type(fractions).__name__ == "_StandIn"
assert importlib.util.find_spec("fractions").name == "fractions"  # asked while it stands in
got = []
threads = [threading.Thread(target=lambda: got.append(bound.Fraction(1, 3))) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
import fractions as real
assert got == [real.Fraction(1, 3)] * 8 and real is not bound and type(real).__name__ == "module"
assert sys.modules["fractions"] is real and bound.Fraction is real.Fraction and bound.__name__ == "fractions"
from fractions import Fraction
assert Fraction is real.Fraction
stand_in("statistics")
import statistics
assert statistics.__file__.endswith("statistics.py") and type(sys.modules["statistics"]).__name__ == "module"
stand_in("colorsys")
from colorsys import *  # noqa: F403 (reads __all__: the real module's)
assert "rgb_to_hsv" in dir()
stand_in("threading")  # imported already: nothing to stand in for
assert type(sys.modules["threading"]).__name__ == "module"
stand_in("inspect")
import dataclasses
@dataclasses.dataclass(frozen=True)
class NoDoc:
    x: int
assert NoDoc.__doc__ == "NoDoc(x: int)" and "dis" in sys.modules  # the one use: the real inspect, then
print("ok")
"""


def test_a_stand_in_is_the_real_module_from_its_first_use() -> None:
    """util.lazy.stand_in (how the CLI's batch commands defer ``inspect``): ``import`` gets the
    stand-in at no cost; the first attribute read, from any thread, imports the real module,
    which replaces it in sys.modules and whose names the stand-in then holds; a module that
    is imported already is left alone; a dataclass with no docstring still gets its signature."""
    proc = subprocess.run([sys.executable, "-c", _STAND_IN], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "ok\n", proc.stderr


@pytest.mark.parametrize("command", [["ls", "--json"], ["verify"], ["stats"], ["grep", "-n", "-C", "1", "e"],
                                     ["grep", "-E", "--json", "[a-z]+"]])
def test_a_batch_command_never_loads_the_real_inspect(command: list[str], tmp_path: Path) -> None:
    """``dataclasses`` imports ``inspect`` (10 ms with ``ast``, ``dis``, ``tokenize``) for the
    docstring of a record that has none: every record of ours has one, and a batch command
    run as ``python -m spillscope`` (a stand-in for it, frontends.cli.entry) never loads it."""
    root = tmp_path / "root"
    shutil.copytree(UPSTREAM / "spill-root", root)
    proc, modules = run(*command, str(root))
    assert proc.returncode in (0, 1) and proc.stdout, proc.stderr
    # (not tokenize: verify's worker pool imports traceback, and with it tokenize, at its exit)
    assert loaded(modules, ["ast", "dis"]) == []
    assert "spillscope.frontends.cli.entry" in modules


#: Installed as sitecustomize (so that the interpreter is started to run spillscope itself, as a
#: user starts it): says on stderr whether the interpreter's teardown ran (its audit event)
#: and, with ATEXIT set, registers a callback that says so.
_EXITING = """
import atexit, os, sys
sys.addaudithook(lambda event, _, write=os.write: event == "cpython.PyInterpreterState_Clear" and write(2, b"<teardown>"))
if os.environ.get("ATEXIT"):
    atexit.register(lambda: os.write(2, b"<atexit>"))
"""


def exiting(*argv: str, atexit: bool = False, launcher: list[str] | None = None,
            **kw) -> subprocess.CompletedProcess[bytes]:
    """``python -m spillscope ARGV`` (or ``launcher`` ARGV), the teardown and atexit said on stderr."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in ("SPILLSCOPE_S3_TIMEOUT", "ATEXIT", "PYTHONPATH")}
    if atexit:
        env["ATEXIT"] = "1"
    with tempfile.TemporaryDirectory() as site:
        Path(site, "sitecustomize.py").write_text(_EXITING)
        env["PYTHONPATH"] = site
        command = launcher if launcher is not None else [sys.executable, "-m", "spillscope"]
        return subprocess.run([*command, *argv], capture_output=True, timeout=120, env=env, **kw)


@pytest.fixture
def many_hits(tmp_path: Path) -> Path:
    """A root whose grep writes 1.4 MB: far more than a pipe holds, so the last of it is
    still buffered when the command returns."""
    session = tmp_path / "root" / "session-0123456789ab"
    session.mkdir(parents=True)
    lines = "".join(f"line {i} holds the needle, \U0001f600 and \u00e9\n" for i in range(20_000))
    (session / "0123456789ab-bash.txt").write_text(lines)
    return tmp_path / "root"


def test_a_batch_command_ends_without_the_interpreters_teardown(many_hits: Path) -> None:
    """``grep`` (as ls, stats, cat and verify) ends with ``os._exit`` once its output is flushed
    (the teardown was 9 ms of its start-up, issue 26): every byte is there, the exit status
    is the command's, and the teardown never ran."""
    proc = exiting("grep", "--json", "-n", "needle", str(many_hits))
    assert (proc.returncode, proc.stderr) == (0, b"")
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 20_000 and [json.loads(line)["line"] for line in lines] == list(range(1, 20_001))
    none = exiting("grep", "absent", str(many_hits))
    assert (none.returncode, none.stdout, none.stderr) == (1, b"", b"")
    # An error a command reports itself is flushed on stderr too, with grep's status 2.
    bad = exiting("grep", "-E", "(?<=x)y", str(many_hits))
    assert bad.returncode == 2 and bad.stderr.startswith(b"spillscope: ") and b"<teardown>" not in bad.stderr


def test_an_exit_with_something_left_to_run_is_the_interpreters(many_hits: Path) -> None:
    """An ``atexit`` callback (coverage's, multiprocessing's, a library's) runs, and the
    interpreter's teardown after it; so does any command not known to only write its output
    (here ``prune``), and a run that named no command."""
    proc = exiting("grep", "-c", "needle", str(many_hits), atexit=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{many_hits / 'session-0123456789ab' / '0123456789ab-bash.txt'}: 20000\n".encode(), b"<atexit><teardown>")
    pruned = exiting("prune", "--dry-run", "--older-than", "1d", str(many_hits))
    assert pruned.returncode == 0 and pruned.stderr.endswith(b"<teardown>"), pruned.stderr
    version = exiting("--version")
    assert version.returncode == 0 and version.stderr == b"<teardown>"


def test_the_console_script_ends_as_python_m_does(many_hits: Path) -> None:
    proc = exiting("grep", "-c", "needle", str(many_hits), launcher=[str(Path(sys.executable).parent / "spillscope")])
    assert proc.returncode == 0 and proc.stdout.endswith(b": 20000\n") and proc.stderr == b""


def test_a_run_of_spillscope_inside_something_else_exits_as_python_does(many_hits: Path) -> None:
    """Only an interpreter started to run spillscope ends at once: under a profiler (``-m
    cProfile -m spillscope``) the profile is written, and a script that runs it through runpy
    and catches its SystemExit goes on after it."""
    profiled = exiting("grep", "-c", "needle", str(many_hits), launcher=[sys.executable, "-m", "cProfile", "-m", "spillscope"])
    assert profiled.returncode == 0 and b"function calls" in profiled.stdout and profiled.stderr.endswith(b"<teardown>")
    script = ("import runpy, sys\n"
              "sys.argv = ['spillscope', *sys.argv[1:]]\n"
              "try:\n    runpy.run_module('spillscope', run_name='__main__', alter_sys=True)\n"
              "except SystemExit as exc:\n    print('the caller goes on after', exc.code)\n")
    caller = exiting("grep", "-c", "needle", str(many_hits), launcher=[sys.executable, "-c", script])
    assert caller.stdout.endswith(b": 20000\nthe caller goes on after 0\n") and caller.stderr == b"<teardown>"


def test_a_reader_gone_before_the_end_is_still_a_quiet_exit(many_hits: Path) -> None:
    """``spillscope grep … | head -1``: the first line, the command's status, no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "grep", "needle", str(many_hits)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""
    assert first.startswith(os.fsencode(many_hits / "session-0123456789ab" / "0123456789ab-bash.txt"))


def test_every_record_has_a_docstring() -> None:
    """A dataclass with no docstring gets its signature as one, made by ``inspect`` (10 ms to
    import with ast, dis and tokenize), which the CLI's batch commands otherwise never load:
    each record of spillscope's says what it holds."""
    import ast

    src = Path(__file__).parent.parent / "src" / "spillscope"
    bare = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and ast.get_docstring(node) is None and any(
                    "dataclass" in ast.unparse(d) for d in node.decorator_list):
                bare.append(f"{path.relative_to(src)}: {node.name}")
    assert bare == []
    assert len(list(src.rglob("*.py"))) > 100  # (the sources are where this looked)
