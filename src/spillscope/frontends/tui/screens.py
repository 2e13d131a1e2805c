"""Screens: the transcript reader, the help screen and the small input modals.

Kept as the old import path (tests, scripts and benchmarks import from it); each screen now
lives in a module of its own: help, prompts, goto, export, reader."""

from __future__ import annotations

from .export import export_message
from .goto import Goto, parse_goto
from .help import HelpScreen
from .prompts import ConfirmScreen, PromptScreen
from .reader import ReaderScreen

__all__ = ["ConfirmScreen", "Goto", "HelpScreen", "PromptScreen", "ReaderScreen",
           "export_message", "parse_goto"]
