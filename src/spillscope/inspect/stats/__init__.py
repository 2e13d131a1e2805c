"""Operators' views of a root: where the bytes are, what the notices omitted, what the sweep
takes next. :mod:`.model` holds the records and tables, :mod:`.builder` folds a walk into
them, and one module per source feeds it (:mod:`.dsh`; an agent dialect adds its own)."""

from typing import TYPE_CHECKING

from ...util.lazy import lazy_exports

if TYPE_CHECKING:
    from .builder import StatsBuilder
    from .dsh import dsh_stats
    from .model import Stats, SweepOutlook, Table, Totals
    from .tables import TABLES

_EXPORTS = {
    "builder": ("StatsBuilder",),
    "dsh": ("dsh_stats",),
    "model": ("Stats", "SweepOutlook", "Table", "Totals"),
    "tables": ("TABLES",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["StatsBuilder", "Stats", "SweepOutlook", "TABLES", "Table", "Totals", "dsh_stats"]
