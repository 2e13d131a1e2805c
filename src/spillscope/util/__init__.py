"""Core helpers every layer uses: JavaScript string semantics (UTF-8 as Node writes it,
JSON.stringify, visible text), no-follow file access, lazy exports and JS number rules.
Nothing here knows about spills, sessions or a UI."""
