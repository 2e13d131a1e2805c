"""Scanning a spill root: what is there, from names and ``lstat`` only.

* :mod:`.tree` — root → session dirs → artifacts (:func:`~.tree.scan_root`, the records
  :class:`~.tree.RootScan`, :class:`~.tree.SessionDir`, :class:`~.tree.Artifact`, and the
  name rules that classify an entry);
* :mod:`.listing` — the ``ls`` listing built from a scan (in worker processes on a wide
  root) or from a full inspection.

Nothing here reads an artifact's content or a session log.
"""
