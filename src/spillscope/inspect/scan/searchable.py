"""The files a search reads under a local spill root, found from directory entries alone.

A search with no session logs needs, per artifact, only its path, session dir and kind (from
its name), and the findings that stop an artifact being searched (a symlink, an entry that is
not a regular file, an unreadable dir). :func:`~.tree.scan_root` ``lstat``s every file for
its size, mode and mtime, which a search never uses: here a session dir's ``scandir`` type
(``d_type``) says "regular file" with no system call per file, and only the rare other entry
is ``lstat``ed, by :func:`~.tree.lstat_artifact` itself, so its findings are the scan's.
The root's own entries go through :func:`~.tree.root_plan` likewise (``modes=False``: a
session dir known by its type, the rare other entry as the scan sees it). On a root of
7,000 files this is a third of the scan's time, and a search that rules every file out in
C spends most of its Python time here.
"""

from __future__ import annotations

import os
from typing import Iterator, NamedTuple, Sequence, Union

from ..findings import Finding, finding
from .tree import SessionSpec, classify_name, lstat_artifact, root_plan


class SearchableFile(NamedTuple):
    """A regular file in a session dir: what a search needs of it (a NamedTuple: cheap per file)."""

    path: str
    session_dir: str
    name: str
    kind: str


#: One entry of the root, as :func:`~.tree.root_plan` gives it: a session dir's spec or a finding.
PlanItem = Union[Finding, SessionSpec]


def searchable_plan(root: str) -> list[PlanItem] | None:
    """The root's entries that :func:`iter_searchable` walks, in its order (a part of them is
    walked by passing it as ``plan``), or None where the root is unusable (the walk says why)."""
    done, plan = root_plan(root, modes=False)
    return None if done is not None else plan


def iter_searchable(root: str, plan: Sequence[PlanItem] | None = None) -> Iterator[SearchableFile | Finding]:
    """Every regular file of every session dir under the local dir ``root``, sorted by session
    dir and name, and the findings :func:`~.tree.scan_root` gives for what is not one
    (symlinks, other entries where an artifact belongs, unreadable or vanished dirs and
    entries, an unusable root), as the walk goes: session dir by session dir, each finding
    where its dir comes, so that a search can start on the first files while the walk goes on
    (on a root of 7,000 files the walk is a fifth of a search that rules every file out).
    Findings about names, modes or stray entries of the root are not made: they stop nothing
    being searched. ``plan``: only these entries of the root (a part of
    :func:`searchable_plan`'s, for a search split across processes)."""
    if plan is None:
        done, plan = root_plan(root, modes=False)
        if done is not None:
            yield from done.findings
            return
    for item in plan:
        if isinstance(item, Finding):
            if item.code != "unexpected-entry":  # a stray entry of the root is not an artifact
                yield item
            continue
        path, dir_name = item[0], item[1]
        try:
            with os.scandir(path) as it:
                entries = sorted(((e.name, e) for e in it), key=lambda pair: pair[0])
        except OSError as exc:
            yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
            continue
        prefix = path + os.sep
        for name, entry in entries:
            try:
                # d_type: no system call, except where the file system leaves it unknown.
                regular = entry.is_file(follow_symlinks=False)
            except OSError:
                regular = False
            if regular:
                yield SearchableFile(prefix + name, dir_name, name, classify_name(name)[1])
                continue
            # The rare case, as the scan sees it: its lstat, its findings (a file that is
            # regular by now is searched, and its name's or mode's findings are not a search's).
            found: list[Finding] = []
            art = lstat_artifact(prefix + name, name, dir_name, found)
            if art is not None and art.is_regular:
                yield SearchableFile(art.path, dir_name, name, art.kind)
            else:
                yield from found
