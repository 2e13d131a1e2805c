"""Watching a live spill root: change events that always agree with the disk.

* :mod:`.events` — the seam's vocabulary (:class:`~.events.ChangeEvent`,
  :data:`~.events.EventKind`, :data:`~.events.STATUS_EVENTS`) and the
  :class:`~.events.Watcher` base every backend implements;
* :mod:`.root` — :func:`~.root.open_watcher` (picks the backend for a root),
  :func:`~.root.watch_root` and :func:`~.root.awatch_root`;
* :mod:`.local` and :mod:`.state` — a directory followed by its path through watchfiles,
  and the picture of it kept in agreement with the disk (coalesced, reordered, overflowed
  or lost notifications still end in a state that matches it);
* :mod:`.poll` — a root in an object store (``s3://``), its listing polled (imported only when asked);
* :mod:`.child` — the local watch run in a child process, for a busy caller (the TUI);
* :mod:`.patch` — a batch of events applied to a shown inspection, path by path.
"""
