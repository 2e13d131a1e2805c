"""Byte parity with the reference implementation (issue #14, FORMAT.md §3/§5, PARITY.md).

The four classes the differential run found, each as its reproducer and as its rule, and
a replay of recorded differential vectors: random inputs (tests/parity_gen.py) with the
reference's own answers beside them (model-visible text, counts, error codes and saved
files), which spillscope must reproduce exactly.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from spillscope.util.text import js_utf8
from spillscope.reference.preview import retention_splits, seen_byte_ranges, shortened_omission
from spillscope.reference.preparation import CaptureSource, SessionReferenceError, prepare, validate_config
from spillscope.reference.retention import truncate_with_notice
from spillscope.formats.sessionlog import SessionCapture, SessionHeader
from spillscope.spill import (RETRIEVAL_HINT, Locator, SaveTextSpill, SpillPolicy, SpillRef, SpillStore, has_spill_notice,
                              parse_spill_notice, retain_head_tail)
from spillscope.spill.local import LocalSpillStore
from spillscope.spill.replay import scrub_locators

import parity_gen

RECORDED = Path(__file__).parent / "fixtures" / "parity" / "reference-differential.jsonl.gz"
FORK = ("(Omitted 5 bytes. Omitted 2 images. Full formatted result stored at: /r/f. "
        "Use read with offset/limit, or grep this path to search within it.)")


class MemoryStore(SpillStore):
    """Records every save; the locator is ``/r/session-x/000000000000-<name>`` unless fixed."""

    def __init__(self, locator: str | None = None) -> None:
        self.locator = locator
        self.saved: list[dict[str, str]] = []

    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        self.saved.append({"name": request.suggested_name, "content": request.content})
        loc = self.locator if self.locator is not None else f"/r/session-x/000000000000-{request.suggested_name}"
        return SpillRef(Locator(loc), len(js_utf8(request.content)), RETRIEVAL_HINT)


def capture(sid: str, session: dict[str, Any]) -> SessionCapture:
    events = []
    for i, m in enumerate(session["messages"]):
        if m["role"] == "user":
            src = {"kind": "plugin", "plugin": "compact"} if m["checkpoint"] else {"kind": "user"}
            events.append({"type": "user/message", "seq": i, "data": {"source": src, "content": [{"type": "text", "text": m["text"]}]}})
        else:
            events.append({"type": "assistant/message", "seq": i,
                           "data": {"message": {"content": [{"type": "text", "text": m["text"]}]}}})
    return SessionCapture(SessionHeader(sid, 3, session["cwd"], {}), tuple(events), session["seq"])


def js_number(text: str) -> int | float:
    """What ``Number(text)`` is, as the Python value a caller would pass."""
    try:
        return int(text)
    except ValueError:
        return float(text)


async def run(case: dict[str, Any]) -> dict[str, Any]:
    """spillscope's answer in the recorded shape (see tests/parity_gen.py)."""
    try:
        op = case["op"]
        if op == "retain":
            kept = retain_head_tail(case["text"], case["head"], case["tail"])
            return {"text": kept.text, "omitted": kept.omitted_bytes}
        if op == "has":
            return {"result": has_spill_notice(case["text"])}
        if op == "scrub":
            return {"result": scrub_locators(case["text"])}
        if op == "sweep":
            with tempfile.TemporaryDirectory() as where:
                return sweep_answer(case, Path(where))
        if op == "policy":
            cap = case["capRaw"] if "capRaw" in case else js_number(case["cap"]) if "cap" in case else None
            store = MemoryStore(case["locator"])
            policy = SpillPolicy(cap, store)
            out = await policy.bound_result(tool_name="bash", call_id="c", content=case["text"], owner_session_id="o")
            if not store.saved:
                return {"out": None}
            return {"out": out.text if out.replaced else "KEPT", "saved": True}
        assert op == "reference"
        config = case["config"]
        kwargs: dict[str, Any] = {}
        if "maxReferences" in config:
            kwargs["max_references"] = js_number(config["maxReferences"])
        budget = js_number(config["maxReferenceBytes"]) if "maxReferenceBytes" in config else None
        store = MemoryStore()
        source = CaptureSource({sid: capture(sid, s) for sid, s in case["sessions"].items()})
        msg = await prepare(case["target"], case["refs"], source=source, max_reference_bytes=budget, store=store, **kwargs)
        if msg is None:
            return {"none": True}
        keys = ("compacted", "originalMessages", "retainedMessages", "omittedMessages", "omittedBytes", "truncated")
        stats = [{k: v for k, v in r.items() if k in keys} for r in msg.source["references"]]
        return {"prompt": msg.text, "stats": stats, "saved": store.saved}
    except SessionReferenceError as exc:
        return {"error": exc.code, "message": str(exc)}
    except ValueError as exc:
        return {"error": "Error", "message": str(exc)}


def sweep_answer(case: dict[str, Any], where: Path) -> dict[str, Any]:
    """What the start-up sweep of a store configured as ``case`` says deleted (parity_gen.sweep_case)."""
    root, base = where / "root", where / "tmp"
    root.mkdir(mode=0o700)
    base.mkdir(mode=0o700)
    now = time.time()
    for f in case["files"]:
        (root / f["dir"]).mkdir(mode=0o700, exist_ok=True)
        path = root / f["dir"] / f["name"]
        path.write_text("x")
        os.utime(path, (now - f["ageDays"] * 86400,) * 2)
    kwargs = {"cleanup_period_days": case["cleanupPeriodDays"]} if "cleanupPeriodDays" in case else {}
    try:
        LocalSpillStore(root, default_roots_base=base, **kwargs).wait_for_cleanup()
    except (TypeError, ValueError) as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"deleted": sorted(f"{f['dir']}/{f['name']}" for f in case["files"]
                              if not (root / f["dir"] / f["name"]).exists())}


@pytest.mark.parametrize("seed", range(4))
def test_a_null_cleanup_period_sweeps_as_the_default_30_days(seed: int) -> None:
    """The reference reads ``cleanupPeriodDays ?? 30``: ``null`` sweeps with 30 days, as an
    absent value does (issue 27 item 14: every null case differed, nothing else did)."""
    r = random.Random(seed)
    cases = [c for c in (parity_gen.sweep_case(r) for _ in range(60)) if "cleanupPeriodDays" in c
             and c["cleanupPeriodDays"] is None]
    assert cases
    deleted = 0
    for case in cases:
        answers = [asyncio.run(run(c)) for c in (case, {**case, "cleanupPeriodDays": 30},
                                                 {k: v for k, v in case.items() if k != "cleanupPeriodDays"})]
        assert answers[0] == answers[1] == answers[2], (case, answers)
        deleted += len(answers[0]["deleted"])
    assert deleted  # the cases do reach past the cutoff


def recorded() -> list[dict[str, Any]]:
    with gzip.open(RECORDED, "rt", encoding="ascii") as f:
        return [json.loads(line) for line in f]


def test_recorded_differential_vectors_match_the_reference_exactly():
    cases = recorded()
    ops = {c["case"]["op"] for c in cases}
    assert ops == {"retain", "policy", "has", "reference", "scrub"} and len(cases) == 900
    # The recording covers what it claims to: each error code, BOM-led inputs, spills.
    answers = [c["reference"] for c in cases]
    assert {a.get("error") for a in answers} >= {
        "Error", "SESSION_REFERENCE_INVALID_CONFIG", "SESSION_REFERENCE_INVALID_REFERENCE",
        "SESSION_REFERENCE_SELF_REFERENCE", "SESSION_REFERENCE_BUDGET_EXCEEDED"}
    assert sum(1 for a in answers if a.get("saved")) > 50

    async def all_cases() -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
        return [(c["case"], c["reference"], await run(c["case"])) for c in cases]

    differ = []
    for case, ref, mine in asyncio.run(all_cases()):
        if case["op"] == "policy" and "error" in ref:
            # A plain Error upstream: same refusal, message compared loosely below.
            ref, mine = {"error": ref["error"]}, {"error": mine.get("error")}
        if ref != mine:
            differ.append((case, ref, mine))
    assert differ == [], f"{len(differ)} of {len(cases)} differ; first: {differ[0]!r:.2000}"


# --- class 1: TextDecoder strips one leading BOM per decode() ---------------------------

def test_parity_bom_reproducers():
    kept = retain_head_tail("aaaaaaaaaa\ufeffbbbbb", 2, 8)
    assert (kept.text, kept.omitted_bytes) == ("aabbbbb", 8)
    kept = retain_head_tail("\ufeffabc", 10, 10)
    assert (kept.text, kept.omitted_bytes) == ("abc", None)
    store = MemoryStore("/r/f.txt")
    out = asyncio.run(SpillPolicy(400, store).bound_result(tool_name="t", call_id="c", content="\ufeff" + "x" * 600,
                                                           owner_session_id="o"))
    assert out.replaced and out.text is not None and out.text.startswith("x")
    assert store.saved[0]["content"] == "\ufeff" + "x" * 600  # the saved file keeps it


async def _one_reference(text: str, budget: int) -> tuple[Any, Any]:
    cap = capture("s", {"messages": [{"role": "user", "text": text, "checkpoint": False}], "cwd": None, "seq": 0})
    msg = await prepare("t", [{"sessionId": "s"}], source=CaptureSource({"s": cap}), max_reference_bytes=budget,
                        store=MemoryStore())
    assert msg is not None
    return msg.preview[0]["conversation"][0]["text"], msg.notices[0]["omittedBytes"]


def test_parity_bom_in_a_shortened_reference_message():
    text, omitted = asyncio.run(_one_reference("\ufeff" + "x" * 300, 200))
    assert text == "x" * 59 + "\n[… omitted 241 UTF-8 bytes …]" and omitted == 241


@pytest.mark.parametrize("seed", range(4))
def test_bom_rule_holds_at_every_cut(seed):
    """The rule, not the example: every head/tail split of BOM-laden text decodes each
    piece without its leading BOM, and the count is bytes (a stripped BOM is kept)."""
    r = random.Random(seed)
    pieces = ["\ufeff", "a", "é", "界", "😀", "\ud800", "\r\n"]
    for _ in range(400):
        text = "".join(r.choice(pieces) for _ in range(r.randint(0, 12)))
        data = js_utf8(text)
        head, tail = r.randint(0, len(data) + 2), r.randint(0, len(data) + 2)
        kept = retain_head_tail(text, head, tail)
        if kept.omitted_bytes is None:
            assert kept.text == data.decode("utf-8").removeprefix("\ufeff")
            continue
        # The reference's pieces, rebuilt from the bytes: kept bytes + omitted = total.
        visible = len(js_utf8(kept.text))
        stripped = len(data) - kept.omitted_bytes - visible
        assert stripped in (0, 3, 6) and (stripped == 0 or "\ufeff" in text)
        # A BOM is stripped only where a piece starts: the head at byte 0.
        assert (stripped >= 3) >= (data.startswith(b"\xef\xbb\xbf") and head >= 3)


def test_checker_accepts_bom_stripped_previews_and_counts_their_bytes():
    r = random.Random(14)
    pieces = ["\ufeff", "x", "é", "😀", "\ud800", "\n"]
    checked = 0
    for _ in range(3000):
        original = "".join(r.choice(pieces) for _ in range(r.randint(1, 30)))
        preview, n = truncate_with_notice(original, r.randint(0, 90))
        if preview == original:
            continue
        checked += 1
        assert shortened_omission(preview, original) == n, (original, preview)
        ranges = seen_byte_ranges(preview, original)
        assert ranges is not None
        # The model saw exactly the preview's bytes: a stripped BOM is in no seen range.
        data = js_utf8(original)
        shown = js_utf8(preview.rsplit("\n[… omitted", 1)[0]) if preview else b""
        assert b"".join(data[a:b] for a, b in ranges) == shown
    assert checked > 1000
    # A forged count is still caught.
    preview, n = truncate_with_notice("\ufeff" + "x" * 300, 89)
    assert shortened_omission(preview.replace(f"omitted {n}", f"omitted {n + 1}"), "\ufeff" + "x" * 300) != n + 1


def test_retention_splits_finds_each_stripped_bom():
    original = b"\xef\xbb\xbfhead" + b"-" * 20 + b"\xef\xbb\xbftail"
    kept = b"headtail"
    splits = retention_splits(kept, original, original, len(original))
    # The head piece must have had its BOM stripped; the tail piece may or may not have
    # started with the second one: both are readings, with counts 3 bytes apart.
    assert {(s.head_bom, s.tail_bom, s.omitted) for s in splits} == {(True, True, len(original) - 8 - 6),
                                                                    (True, False, len(original) - 8 - 3)}
    assert retention_splits(b"nothing", original, original, len(original)) == []



def test_retention_splits_reads_views_as_it_reads_bytes():
    """The tool-spill check hands the artifact's two ends in as views of one read (a copy
    of a 100 MB end is paid in page faults): every answer is the one for bytes."""
    import random

    from spillscope.reference.preview import common_prefix, common_suffix, same_bytes

    rng = random.Random(7)
    bom = b"\xef\xbb\xbf"
    alphabet = [b"a", b"b", bom, "\u754c".encode()]
    for _ in range(400):
        original = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        k0, k1 = sorted(rng.randrange(0, len(original) + 1) for _ in range(2))
        kept = original[:k0] + original[k1:]
        if rng.random() < 0.3:
            kept = rng.choice([b"", b"a", bom + b"b", kept + b"x", b"x" + kept, kept.replace(b"\xef", b"a")])
        if rng.random() < 0.5 and kept[:3] != bom:
            kept = kept.replace(bom, b"", 1)  # as if a BOM piece were stripped
        n = len(kept) + 3
        head, tail = original[:n], original[max(0, len(original) - n):]
        want = retention_splits(kept, head, tail, len(original))
        whole = memoryview(original)
        assert retention_splits(kept, whole[:n], whole[max(0, len(original) - n):], len(original)) == want
        assert retention_splits(memoryview(kept), whole[:n], whole[max(0, len(original) - n):], len(original)) == want
        assert common_prefix(kept, whole) == common_prefix(kept, original)
        assert common_suffix(memoryview(kept), whole) == common_suffix(kept, original)
        assert same_bytes(kept, whole[:len(kept)]) is (kept == original[:len(kept)])
        assert same_bytes(whole[:0], b"") and not same_bytes(whole, original + b"x")

# --- classes 2 and 3: the reference's validation ------------------------------------------

@pytest.mark.parametrize("refs, code", [
    ([{"sessionId": "s", "label": None}], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([{"sessionId": "s", "label": 3}], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([{"sessionId": None}], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([{"label": "x"}], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([["s"]], "SESSION_REFERENCE_INVALID_REFERENCE"),
    (["s"], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([None], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ([{"sessionId": "t"}], "SESSION_REFERENCE_SELF_REFERENCE"),
    ([{"sessionId": "t"}, {"sessionId": "s", "label": None}], "SESSION_REFERENCE_SELF_REFERENCE"),
    ([{"sessionId": x} for x in "abcd"], "SESSION_REFERENCE_TOO_MANY"),
])
def test_invalid_references_are_refused_and_nothing_is_saved(refs, code):
    store = MemoryStore()
    caps = {sid: capture(sid, {"messages": [{"role": "user", "text": "x" * 999, "checkpoint": False}], "cwd": None, "seq": 0})
            for sid in "abcds"}
    with pytest.raises(SessionReferenceError) as err:
        asyncio.run(prepare("t", refs, source=CaptureSource(caps), max_reference_bytes=100, store=store))
    assert err.value.code == code and store.saved == []


def test_a_missing_label_defaults_to_the_session_id():
    caps = {"s": capture("s", {"messages": [{"role": "user", "text": "hi", "checkpoint": False}], "cwd": None, "seq": 0})}
    msg = asyncio.run(prepare("t", [{"sessionId": "s"}], source=CaptureSource(caps), max_reference_bytes=1000))
    assert msg is not None and msg.preview[0]["label"] == "s"


@pytest.mark.parametrize("budget, ok", [
    (2**53 - 1, True), (2**53, False), (2**53 + 2, False), (200.0, True), (200.5, False), (0, False), (-5, False),
    (math.inf, False), (math.nan, False), (1e300, False), (True, False), ("200", False), (None, True),
])
def test_budget_is_a_positive_safe_javascript_integer(budget, ok):
    if ok:
        assert validate_config(budget)[0] == (65536 if budget is None else int(budget))
    else:
        with pytest.raises(SessionReferenceError) as err:
            validate_config(budget)
        assert err.value.code == "SESSION_REFERENCE_INVALID_CONFIG"


@pytest.mark.parametrize("max_refs, ok", [(1, True), (3, True), (3.0, True), (None, True), (4, False), (0, False),
                                          (1.5, False), (2**53, False)])
def test_max_references_is_checked_like_the_reference(max_refs, ok):
    if ok:
        assert validate_config(100, max_refs) == (100, 3 if max_refs is None else int(max_refs))
    else:
        with pytest.raises(SessionReferenceError, match="maxReferences"):
            validate_config(100, max_refs)


@pytest.mark.parametrize("cap, ok", [(0, True), (400, True), (400.0, True), (2**60, True), (1e300, True), (-0.0, True),
                                     (400.5, False), (-1, False), (math.nan, False), (math.inf, False), (True, False),
                                     (10**400, False),
                                     ("400", False)])
def test_max_inline_bytes_is_a_non_negative_javascript_integer(cap, ok):
    if ok:
        assert SpillPolicy(cap).max_inline_bytes == int(cap)
    else:
        with pytest.raises(ValueError, match="maxInlineBytes must be a non-negative integer"):
            SpillPolicy(cap)


def test_an_absent_cap_is_a_policy_that_keeps_everything():
    store = MemoryStore()
    out = asyncio.run(SpillPolicy(None, store).bound_result(tool_name="t", call_id="c", content="x" * 10**5,
                                                            owner_session_id="o"))
    assert not out.replaced and store.saved == []


# --- class 4: hasSpillNotice ----------------------------------------------------------------

def test_has_spill_notice_vectors(vectors):
    for case in vectors["hasSpillNotice"]:
        assert has_spill_notice(case["text"]) is case["result"], case


def test_has_spill_notice_answers_as_upstream_on_the_fork_variant():
    assert has_spill_notice(FORK) is False
    notice = parse_spill_notice(FORK)
    assert notice is not None and notice.omitted_images == 2 and notice.dialect == "omitted-images"


@pytest.mark.parametrize("text, dialect", [
    ("p\n\n(Omitted 5 bytes. Full formatted result stored at: /x. Read.)", "standard"),
    ("( Full formatted result stored at: /x. Read.)", "standard"),
    ("p\n\n(More bytes were omitted. Full formatted result stored at: /x. Read.)", "more-bytes"),
    ("h\n\n[...]\n\nt\n\n(Omitted 5 bytes. Full formatted result stored at: /x. Read.)", "gap"),
    ("h\n\n[...]\n\nt\n\n(Omitted 5 bytes. Omitted 1 images. Full formatted result stored at: /x. Read.)",
     "omitted-images+gap"),
])
def test_dialects_are_labelled(text, dialect):
    notice = parse_spill_notice(text)
    assert notice is not None and notice.dialect == dialect
    assert has_spill_notice(text) is ("images" not in dialect)


def test_has_spill_notice_leading_zeros_and_unsafe_counts():
    tail = " Full formatted result stored at: /x. Read.)"
    assert has_spill_notice(f"(Omitted {2**53 - 1} bytes.{tail}")
    assert not has_spill_notice(f"(Omitted {2**53} bytes.{tail}")
    assert not has_spill_notice(f"(Omitted 007 bytes.{tail}")
    assert not has_spill_notice(f"(Omitted -0 bytes.{tail}")
    assert not has_spill_notice(f"(Omitted ٣ bytes.{tail}")  # a non-ASCII digit


@pytest.mark.parametrize("seed", range(3))
def test_verify_accepts_what_the_reference_writes_with_boms_at_the_cuts(tmp_path, seed):
    """The inspector checks counts by the same rule: BOM-led tool results and references,
    written by the (parity) writer, verify clean -- and a count off by the BOM does not."""
    from spillscope.inspect import inspect_root
    from spillscope.spill import LocalSpillStore

    r = random.Random(seed)
    root, logs = tmp_path / "root", tmp_path / "logs"
    store = LocalSpillStore(root)
    rows: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "t", "createdAt": 1}]
    texts = []
    for i in range(6):
        body = "".join(r.choice(["x", "é", "\ufeff", "😀", "\n"]) for _ in range(r.randint(300, 900)))
        texts.append("\ufeff" + body)
        out = asyncio.run(SpillPolicy(r.randint(250, 280), store).bound_result(
            tool_name="bash", call_id=f"c{i}", content=texts[-1], owner_session_id="t"))
        assert out.replaced and out.text is not None
        rows.append({"type": "tool/result", "seq": i, "time": 2, "data": {"message": {"content": [
            {"type": "tool-result", "toolCallId": f"c{i}", "content": [{"type": "text", "text": out.text}]}]}}})
    source = CaptureSource({"s": capture("s", {"messages": [{"role": "user", "text": t, "checkpoint": False} for t in texts],
                                               "cwd": None, "seq": 5})})
    msg = asyncio.run(prepare("t", [{"sessionId": "s"}], source=source, max_reference_bytes=700, store=store))
    assert msg is not None and msg.notices
    rows.append({"type": "user/message", "seq": 9, "time": 3, "data": {"source": msg.source, "role": "user", "id": "m",
                                                                        "content": [{"type": "text", "text": msg.text}]}})
    log = logs / "--w--" / "t" / "session.v3.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    ins = inspect_root(root, logs)
    assert {f.code for f in ins.findings} == set(), [f.detail for f in ins.findings]
    assert len(ins.tool_spills) == 6 and ins.references[0].disagreements == []
    # A count no reading of the cuts explains is caught. (N + 3 may be one: whether the
    # tail piece began with a stripped BOM or just after one cannot be told apart.)
    first = ins.tool_spills[0].entry.notice
    forged = log.read_text("utf-8").replace(f"(Omitted {first.omitted_bytes} bytes.", f"(Omitted {first.omitted_bytes + 1} bytes.", 1)
    log.write_text(forged, "utf-8")
    assert "omission-mismatch" in {f.code for f in inspect_root(root, logs).findings}


def test_an_all_bom_preview_is_no_preview_and_the_replacement_is_the_notice_alone():
    from spillscope.spill.policy import replacement_text

    text = "\ufeff" + "x" * 500 + "\ufeff"
    kept = retain_head_tail(text, 3, 3)
    assert (kept.text, kept.omitted_bytes) == ("", 500)  # both BOMs counted as kept
    ref = SpillRef(Locator("/r/f"), 506, RETRIEVAL_HINT)
    reserve = len(js_utf8(f"(Omitted 506 bytes. Full formatted result stored at: /r/f. {RETRIEVAL_HINT})")) + 2
    out = replacement_text(text, 506, ref, reserve + 6)
    assert out == f"(Omitted 500 bytes. Full formatted result stored at: /r/f. {RETRIEVAL_HINT})"
