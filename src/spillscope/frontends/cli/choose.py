"""Where a path becomes an agent's dialect: once, after parsing, before any command runs.

:func:`choose`: ``--agent NAME`` forces a dialect, ``--logs`` or an ``s3://`` root means dsh,
otherwise the tree's layout decides (:func:`spillscope.dialects.detect`, which reads names
only). dsh keeps its own commands; any other agent gets those of agents.py, imported then.
Apart from agents.py because every tree command passes here, and most trees are dsh's.
"""

from __future__ import annotations

import argparse
import os

from ...dialects import DialectError, detect, get
from ...storage import UnsupportedRoot, open_storage
from .args import UsageError

#: The commands that take a tree (the rest take a file, or write one).
_TREE_COMMANDS = ("ls", "verify", "grep", "prune", "watch", "tui", "serve")


def choose(args: argparse.Namespace) -> None:
    """Pick the dialect for ``args.root`` and, for an agent other than dsh, its command."""
    if args.command not in _TREE_COMMANDS:
        return
    name = getattr(args, "agent", None)
    root = args.root
    try:
        store = open_storage(root)
    except UnsupportedRoot:
        return  # the command's own open_root refuses it, by name
    try:
        if name is not None:
            dialect = get(name)
        elif getattr(args, "logs", None) is not None or store.tree is None or not _listable(root):
            # dsh's own commands (an object store is dsh's), and their own errors for a
            # missing or unreadable root
            return
        else:
            dialect = detect(root)
    except DialectError as exc:
        if args.command in ("prune", "watch") and name is None:
            return  # dsh's prune: it deletes only in trusted session-<12 hex> dirs, refusing the rest
        raise UsageError(str(exc)) from None
    args.dialect = dialect
    if dialect.name == "dsh":
        return
    for option in ("logs", "rebase"):
        if getattr(args, option, None) is not None:
            # Said, not ignored: another agent's transcripts are in its own tree.
            raise UsageError(f"--{option} is for dsh roots; {dialect.title} keeps its transcripts in {root}")
    from ...storage.local import directory_problem

    problem = directory_problem(root)
    if problem is not None:
        # The one message every command gives for a root that is not there (or not a dir). An
        # agent's tree is not waited for (dsh's watch waits for its root: the harness makes it
        # at start; an agent's tree is its home dir, there long before it is watched), so a
        # misspelt path is exit 2 at once, never a silent wait.
        raise UsageError(str(problem))
    if args.command == "serve":
        return  # dsh's serve, whose tabs run `spillscope tui ROOT --agent NAME` (args.dialect says which)
    from . import agents  # here: a dsh root (most runs) needs none of the other agents' commands

    args.func = {"tui": agents.cmd_tui, "watch": agents.cmd_watch, "ls": agents.cmd_ls, "verify": agents.cmd_verify,
                 "grep": agents.cmd_grep, "prune": agents.cmd_prune}[args.command]


def _listable(root: str) -> bool:
    try:
        with os.scandir(root):
            return True
    except OSError:
        return False
