"""The names of the tables a :class:`~.model.Stats` gives, in the order the human view shows them.

Apart from :mod:`.model` (whose records are many dataclasses, slow to build at import) so
that the command line's parser offers them (``stats --table``) without loading the stats.
"""

#: Every table a :class:`~.model.Stats` gives, in the order the human view shows them.
TABLES = ("totals", "agents", "projects", "kinds", "tools", "days", "ages", "findings", "sessions",
          "top-sessions", "top-files", "sweep")
