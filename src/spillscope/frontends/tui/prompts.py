"""The small input modals: a one-line prompt and a yes/no confirmation.

Separate because the browse and the reader both ask through them; they know nothing of either."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question: `y` or Enter says yes, `n` or Escape says no."""

    BINDINGS = [Binding("y,enter", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Static(self.question, id="confirm-question", markup=False)
            yield Static("y / Enter: yes    n / Escape: no", id="confirm-keys", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PromptScreen(ModalScreen[str | None]):
    """A one-line prompt; dismisses with the text, or None on Escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Static(self.title_text, id="prompt-title", markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
