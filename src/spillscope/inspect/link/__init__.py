"""Linking each notice in the logs to the artifact it names, and checking it against it.

* :mod:`.records` — what a link pass produces (:class:`~.records.ReferenceLink`,
  :class:`~.records.ToolSpillLink`, :class:`~.records.ArtifactCheck`);
* :mod:`.locate` — where a locator points under the inspected root (``--rebase``,
  ``s3://``), or why it cannot; :mod:`.replay` — matching replay-normalised locators;
* :mod:`.blind` — the places the scan could not read (a notice there is *unverified*);
* :mod:`.transcripts` — reading each transcript once, however many notices name it;
* :mod:`.reference` and :mod:`.tool` — the two linkers: a session-reference notice against
  its transcript's digest, a tool-spill notice's preview against its artifact's ends.

The order of a whole pass is :mod:`spillscope.inspect.verify.inspection`'s business.
"""
