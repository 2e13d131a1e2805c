"""Compatibility: this module moved to :mod:`spillscope.formats.sessionlog`; every name it had stays importable here."""

from .formats.sessionlog import (  # noqa: F401
    DEFAULT_MAX_LINE_BYTES,
    LOG_NAMES,
    LOG_PATTERN,
    LogError,
    LogLineError,
    LogProblem,
    LogRow,
    MAX_BAD_RUN,
    MAX_ZSTD_RATIO,
    SURFACE_TYPES,
    SessionCapture,
    SessionHeader,
    ZSTD_SLACK,
    _Window,
    _ZSTD_MAGIC,
    _kind,
    _open_log,
    capture_log,
    find_logs,
    find_logs_checked,
    fold_surface,
    is_log_name,
    iter_log,
    open_log,
    parse_header,
    zstd_frames_problem,
)

__all__ = ['DEFAULT_MAX_LINE_BYTES', 'LOG_NAMES', 'LOG_PATTERN', 'LogError', 'LogLineError', 'LogProblem', 'LogRow', 'MAX_BAD_RUN', 'MAX_ZSTD_RATIO', 'SURFACE_TYPES', 'SessionCapture', 'SessionHeader', 'ZSTD_SLACK', '_Window', '_ZSTD_MAGIC', '_kind', '_open_log', 'capture_log', 'find_logs', 'find_logs_checked', 'fold_surface', 'is_log_name', 'iter_log', 'open_log', 'parse_header', 'zstd_frames_problem']
