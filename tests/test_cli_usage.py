"""The command line's usage (issue 27, items 6, 7 and 12): a mistyped command or option
gets the close one suggested and the usage of the command it was given to; ``help
[COMMAND]`` works; every option and positional is described; ``--version`` says whether
the C accelerator runs. The whole class of one-letter slips is generated and run through
``main()``; the examples the issue names go through the real entry point."""

from __future__ import annotations

import argparse
import os
import string
import subprocess
import sys

import pytest

from spillscope import __version__
from spillscope.frontends.cli.main import build_parser, main
from spillscope.frontends.cli.suggest import close, distance


def run(*args: str, cwd: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def slips(word: str) -> set[str]:
    """Every one-edit slip of ``word``: a letter dropped, added, changed, or two swapped."""
    letters = string.ascii_lowercase + "-"
    out = {word[:i] + word[i + 1:] for i in range(len(word))}
    out |= {word[:i] + c + word[i:] for i in range(len(word) + 1) for c in letters}
    out |= {word[:i] + c + word[i + 1:] for i in range(len(word)) for c in letters}
    out |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    return out - {word}


def test_every_one_letter_slip_of_every_command_is_suggested(tmp_path, monkeypatch, capsys):
    from spillscope.frontends.cli.main import _unknown_command

    monkeypatch.chdir(tmp_path)  # no path of those names here: none of them names a root
    parser = build_parser()
    names = set(commands())
    tried = []
    for name in sorted(names):
        for slip in sorted(slips(name) - names):
            if slip and not slip.startswith("-"):  # (one starting with "-" is an option)
                problem = _unknown_command(parser, slip)
                assert problem is not None and f"`{name}`" in problem, (slip, problem)
                tried.append(slip)
    assert len(tried) > 1500
    # main() says it with the usage, for a sample of them (a parser each: the whole class is slow).
    for slip in tried[::50]:
        assert main([slip, "ROOT"]) == 2, slip
        err = capsys.readouterr().err
        assert err.startswith("usage: spillscope ") and "spillscope ROOT" in err, err
        assert f"spillscope: {slip!r} is not a command (did you mean " in err, err


def test_a_slip_that_names_a_path_is_a_root(tmp_path):
    (tmp_path / "lss").mkdir()
    # An existing path is a root (the TUI opens on it: here it refuses, having no terminal).
    proc = run("lss", cwd=str(tmp_path))
    assert proc.returncode == 2 and "did you mean" not in proc.stderr and "needs a terminal" in proc.stderr
    # Path-like words are never taken for a command.
    for word in ("./lss", "lss/", "~lss"):
        assert "did you mean" not in run(word, cwd=str(tmp_path)).stderr


def test_a_word_far_from_every_command_is_taken_for_a_root(tmp_path):
    proc = run("zzqqxx", cwd=str(tmp_path))
    assert proc.returncode == 2 and "did you mean" not in proc.stderr and "zzqqxx" in proc.stderr


@pytest.mark.parametrize("argv, wanted", [(["lss"], "ls"), (["verfy", "/tmp"], "verify"), (["hlep"], "help"),
                                           (["LS", "/tmp"], "ls")])
def test_the_issues_typos_through_the_entry_point(argv, wanted, tmp_path):
    proc = run(*argv, cwd=str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"spillscope: {argv[0]!r} is not a command (did you mean `{wanted}`?)" in proc.stderr, proc.stderr


def _minimal(name: str) -> list[str]:
    """The command with its positionals (placeholders: parsing fails before they are used)."""
    return {"cat": ["cat", "ARTIFACT"], "grep": ["grep", "PATTERN", "ROOT"], "demo": ["demo"],
            "help": ["help"]}.get(name, [name, "ROOT"])


def test_every_unknown_option_of_every_command_shows_that_commands_usage(capsys):
    tried = 0
    for name, parser in commands().items():
        options = {o for a in parser._actions for o in a.option_strings}
        for option in sorted(o for o in options if o.startswith("--")):
            body = option[2:]
            # A letter dropped, two swapped, one changed: three slips of each option.
            for slip in {"--" + body[:1] + body[2:], "--" + body[1] + body[0] + body[2:], "--" + body[:-1] + "q"}:
                if slip in options:
                    continue
                tried += 1
                assert main([*_minimal(name), slip]) == 2
                err = capsys.readouterr().err
                assert err.startswith(f"usage: spillscope {name} "), (slip, err)
                assert f"spillscope {name}: error: unrecognized arguments: {slip}" in err, err
                assert f"`{option}`" in err, (slip, err)
        tried += 1  # an option like no other: the command's usage, no suggestion
        assert main([*_minimal(name), "--zzqqxx-nothing"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"usage: spillscope {name} ") and "did you mean" not in err
    assert tried > 100


def test_ls_jsn_shows_ls_usage_through_the_entry_point():
    proc = run("ls", "--jsn", "/tmp")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: spillscope ls ")
    assert "unrecognized arguments: --jsn (did you mean `--json`?)" in proc.stderr


def test_abbreviated_options_are_refused(capsys):
    # A script's `--jso` must not change meaning when another option starting so is added.
    assert main(["ls", "ROOT", "--jso"]) == 2
    assert "did you mean `--json`" in capsys.readouterr().err


def test_help_and_help_command():
    proc = run("help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: spillscope ")
    assert "spillscope ROOT" in proc.stdout and "exit status" in proc.stdout
    for name, parser in commands().items():
        proc = run("help", name) if name in ("ls", "verify", "help") else None  # three through the entry point
        text = parser.format_help()
        if proc is not None:
            assert proc.returncode == 0 and proc.stdout == text
    proc = run("help", "lss")
    assert proc.returncode == 2 and "did you mean `ls`" in proc.stderr


def test_top_level_help_shows_spillscope_root():
    proc = run("--help")
    assert proc.returncode == 0
    assert "spillscope ROOT [--logs DIR]" in proc.stdout and "spillscope help [COMMAND]" in proc.stdout


def test_every_option_and_positional_is_described():
    parsers = {"spillscope": build_parser(), **{f"spillscope {n}": p for n, p in commands().items()}}
    for prog, parser in parsers.items():
        assert parser.description, prog  # `spillscope help CMD` says what CMD does
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, (prog, choice.dest)
                continue
            assert action.help and action.help != argparse.SUPPRESS, (prog, action.option_strings or action.dest)


def test_version_says_whether_the_accelerator_runs():
    from spillscope.util import native

    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"spillscope {__version__} (Python ")
    if native.NATIVE is not None:
        assert "C accelerator: active" in proc.stdout
    else:
        assert "C accelerator: not built" in proc.stdout
    off = run("--version", env={"SPILLSCOPE_NO_NATIVE": "1"})
    assert "C accelerator: off (SPILLSCOPE_NO_NATIVE=1" in off.stdout
    # An install that could not build it (no compiler): the import fails, and it says why.
    code = ("import sys; sys.modules['spillscope._native'] = None\n"
            "from spillscope.frontends.cli.main import main; sys.exit(main(['--version']))")
    missing = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 0 and "C accelerator: not built (import of spillscope._native halted" in missing.stdout
    assert "pure Python, identical results" in missing.stdout


def test_suggestions_weigh_a_swap_as_one_edit():
    assert distance("verfiy", "verify") == 1 and distance("lx", "ls") == 1 and distance("", "ls") == 2
    assert close("lx", ["ls", "cat"]) == ["ls"] and close("tmp", ["tui", "ls"]) == []
    assert close("cat", ["cat", "cut"]) == ["cat"]
