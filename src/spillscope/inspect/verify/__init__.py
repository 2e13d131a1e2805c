"""The whole-root verify pass and what is worked out from its result.

* :mod:`.inspection` — :func:`~.inspection.inspect_root` (scan, logs, link, checks, in
  that order) and the :class:`~.inspection.Inspection` it returns;
* :mod:`.expiry` — the ``past-retention`` forecast (the backend sweep's own rule);
* :mod:`.coverage` — how many of the notices found were actually checked.
"""
