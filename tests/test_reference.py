"""Session-reference preparation, replay and notice checking against the upstream cases."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

import pytest

from spillscope.reference import (
    CaptureSource,
    LogDirectorySource,
    ReferenceMessageError,
    SessionReferenceError,
    check_notice,
    parse_reference_text,
    prepare,
    project,
    read_transcript,
    replay,
)
from spillscope.reference.retention import truncate_with_notice
from spillscope.formats.sessionlog import SessionCapture, SessionHeader, capture_log
from spillscope.spill import LocalSpillStore, SaveTextSpill, SpillRef, SpillStore, SpillStoreError

from conftest import UPSTREAM


class FailingStore(SpillStore):
    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        raise SpillStoreError("disk full")


def _store(kind, root):
    return {"local": LocalSpillStore(root), "none": None, "failing": FailingStore()}[kind]


async def test_upstream_reference_cases_exact(manifest, same_length_root):
    source = LogDirectorySource(UPSTREAM / "sessions")
    original = manifest["spillRoot"]["originalRoot"]
    by_locator = {a["originalLocator"]: a for a in manifest["artifacts"]}
    for case in manifest["referenceCases"]:
        msg = await prepare(
            case["targetSessionId"],
            case["parsedReferences"],
            source=source,
            max_reference_bytes=case["maxReferenceBytes"],
            store=_store(case["spillStore"], same_length_root),
        )
        assert msg is not None
        assert msg.source == case["contextMessage"]["source"]
        assert msg.preview == case["preview"]
        expected_text = case["contextMessage"]["text"]
        for ours, theirs in zip(msg.notices, case["notices"]):
            if theirs["fullSnapshot"]["status"] == "saved":
                ours_loc, their_loc = ours["fullSnapshot"]["locator"], theirs["fullSnapshot"]["locator"]
                expected_text = expected_text.replace(their_loc, ours_loc)
                art = by_locator[their_loc]
                # Byte-identical transcript, same name after the random prefix.
                assert Path(ours_loc).read_bytes() == (UPSTREAM / "spill-root" / art["path"]).read_bytes()
                assert Path(ours_loc).name[13:] == art["encodedName"]
                assert Path(ours_loc).parent.name == case["ownerSpillDir"]
                assert ours["fullSnapshot"]["bytes"] == theirs["fullSnapshot"]["bytes"]
            else:
                assert ours == theirs
        assert msg.text == expected_text, case["targetSessionId"]
        assert original not in msg.text
        assert (same_length_root / case["ownerSpillDir"]).exists() == (
            case["ownerSpillDirExists"] and case["spillStore"] == "local"
        )


def test_logged_reference_messages_replay_without_io(manifest):
    for case in manifest["referenceCases"]:
        lines = (UPSTREAM / case["log"]).read_text("utf-8").split("\n")
        row = json.loads(lines[case["contextEventSeq"] + 1])
        assert list(row["data"]) == ["source", "content", "role", "id"]
        msg = replay(row["data"])
        assert msg.text == case["contextMessage"]["text"]
        assert msg.source == case["contextMessage"]["source"]
        assert msg.notices == case["notices"]


def test_replay_rejects_a_tampered_message(manifest):
    case = manifest["referenceCases"][0]
    row = json.loads((UPSTREAM / case["log"]).read_text("utf-8").split("\n")[case["contextEventSeq"] + 1])
    row["data"]["content"][0]["text"] = row["data"]["content"][0]["text"].replace('"omittedMessages":13', '"omittedMessages": 13')
    with pytest.raises(ReferenceMessageError):
        replay(row["data"])


def test_upstream_notices_check_clean(manifest):
    for art in manifest["artifacts"]:
        ref = art.get("referencedBy")
        if not ref:
            continue
        case = next(c for c in manifest["referenceCases"] if c["targetSessionId"] == ref["targetSessionId"])
        entry = next(p for p in case["preview"] if p["sessionId"] == art["source"]["sessionId"])
        stats = next(r for r in case["contextMessage"]["source"]["references"] if r["sessionId"] == art["source"]["sessionId"])
        path = UPSTREAM / "spill-root" / art["path"]
        result, problems = check_notice(entry, ref["notice"], read_transcript(path), artifact_size=path.stat().st_size, stats=stats)
        assert problems == [], (art["path"], problems)
        assert result.omitted_bytes == art["expected"]["omittedBytes"]
        assert result.omitted_messages == art["expected"]["omittedMessages"]


def test_check_reports_each_disagreement(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("b82b05c5af7c-session-reference-3.txt"))
    case = next(c for c in manifest["referenceCases"] if c["targetSessionId"] == art["referencedBy"]["targetSessionId"])
    entry = copy.deepcopy(next(p for p in case["preview"] if p["sessionId"] == "src-tiny-preview"))
    notice = copy.deepcopy(art["referencedBy"]["notice"])
    path = UPSTREAM / "spill-root" / art["path"]
    transcript = read_transcript(path)
    notice["omittedBytes"] += 1
    notice["omittedMessages"] = 7
    notice["fullSnapshot"]["bytes"] = 1
    # Corrupt the shortened message's marker N.
    text = entry["conversation"][0]["text"]
    assert text.endswith("\n[… omitted 1144 UTF-8 bytes …]")
    entry["conversation"][0]["text"] = text.replace("omitted 1144", "omitted 1145")
    _, problems = check_notice(entry, notice, transcript, artifact_size=path.stat().st_size)
    fields = {p.field: p for p in problems}
    assert (fields["omittedMessages"].logged, fields["omittedMessages"].recomputed) == (7, 0)
    assert (fields["omittedBytes"].logged, fields["omittedBytes"].recomputed) == (1145, 1144)
    assert (fields["bytes"].logged, fields["bytes"].recomputed) == (1, path.stat().st_size)
    assert (fields["conversation[0].omitted"].logged, fields["conversation[0].omitted"].recomputed) == (1145, 1144)


def test_check_flags_a_preview_that_is_not_head_plus_tail(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("e2b3ab57cf98-session-reference-1.txt"))
    case = next(c for c in manifest["referenceCases"] if c["targetSessionId"] == art["referencedBy"]["targetSessionId"])
    entry = copy.deepcopy(case["preview"][0])
    entry["conversation"][0]["text"] = "INVENTED TEXT"
    _, problems = check_notice(entry, art["referencedBy"]["notice"], read_transcript(UPSTREAM / "spill-root" / art["path"]))
    assert any(p.field == "conversation[0]" for p in problems)


def _capture(sid, texts, *, cwd="/w", seq=None, checkpoint_first=False):
    events = []
    for i, (role, text) in enumerate(texts):
        if role == "user":
            source = {"kind": "plugin", "plugin": "compact"} if (checkpoint_first and i == 0) else {"kind": "user"}
            events.append({"type": "user/message", "seq": i, "data": {"content": [{"type": "text", "text": text}], "source": source, "role": "user"}})
        else:
            events.append({"type": "assistant/message", "seq": i, "data": {"message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}})
    return SessionCapture(SessionHeader(sid, 3, cwd, {}), tuple(events), seq if seq is not None else len(events) - 1)


async def test_whole_message_drops_and_counts(tmp_path):
    cap = _capture("a", [("user", "x" * 300), ("assistant", "y" * 300), ("user", "newest")])
    msg = await prepare("t", [("a", "A")], source=CaptureSource({"a": cap}), max_reference_bytes=200, store=LocalSpillStore(tmp_path))
    ref = msg.source["references"][0]
    assert (ref["originalMessages"], ref["retainedMessages"], ref["omittedMessages"], ref["omittedBytes"]) == (3, 1, 2, 600)
    assert msg.preview[0]["conversation"] == [{"role": "user", "text": "newest"}]
    t = read_transcript(msg.notices[0]["fullSnapshot"]["locator"])
    assert [m.text for m in t.messages] == ["x" * 300, "y" * 300, "newest"]


async def test_checkpoint_is_never_dropped(tmp_path):
    cap = _capture("a", [("user", "summary " * 20), ("assistant", "y" * 300), ("user", "newest")], checkpoint_first=True)
    msg = await prepare("t", [("a", None)], source=CaptureSource({"a": cap}), max_reference_bytes=400, store=None)
    ref = msg.source["references"][0]
    assert ref["compacted"] is True and ref["omittedMessages"] == 1
    assert msg.preview[0]["conversation"][0]["text"].startswith("summary")
    assert msg.preview[0]["label"] == "a"  # a missing label defaults to the id
    assert msg.notices[0]["fullSnapshot"] == {"status": "unavailable", "reason": "storage-not-configured"}


async def test_three_reference_isolation(tmp_path):
    caps = {s: _capture(s, [("user", s * 500), ("assistant", "ok " + s)]) for s in ("p", "q", "r")}
    store = LocalSpillStore(tmp_path)
    msg = await prepare("t", [("p", "P"), ("q", "Q"), ("r", "R")], source=CaptureSource(caps), max_reference_bytes=150, store=store)
    assert [n["sessionId"] for n in msg.notices] == ["p", "q", "r"]
    locators = [n["fullSnapshot"]["locator"] for n in msg.notices]
    assert len(set(locators)) == 3
    for i, (sid, loc) in enumerate(zip("pqr", locators)):
        assert loc.endswith(f"-session-reference-{i + 1}.txt")
        t = read_transcript(loc)
        assert t.metadata.session_id == sid and t.messages[0].text == sid * 500
        entry = msg.preview[i]
        _, problems = check_notice(entry, msg.notices[i], t, artifact_size=Path(loc).stat().st_size, stats=msg.source["references"][i])
        assert problems == []


async def test_failed_storage_and_no_storage():
    caps = {"a": _capture("a", [("user", "z" * 1000)])}
    failed = await prepare("t", [("a", None)], source=CaptureSource(caps), max_reference_bytes=150, store=FailingStore())
    assert failed.notices[0]["fullSnapshot"] == {"status": "unavailable", "reason": "save-failed"}
    missing = await prepare("t", [("a", None)], source=CaptureSource(caps), max_reference_bytes=150)
    assert missing.notices[0]["fullSnapshot"]["reason"] == "storage-not-configured"
    assert "## Reference omissions" in missing.text


async def test_intact_reference_saves_nothing(tmp_path):
    caps = {"a": _capture("a", [("user", "short")])}
    msg = await prepare("t", [("a", None)], source=CaptureSource(caps), max_reference_bytes=4096, store=LocalSpillStore(tmp_path))
    assert msg.notices == [] and "## Reference omissions" not in msg.text
    assert list(tmp_path.iterdir()) == []


async def test_self_duplicates_and_too_many():
    caps = {s: _capture(s, [("user", "x")]) for s in "abcd"}
    src = CaptureSource(caps)
    with pytest.raises(SessionReferenceError) as info:
        await prepare("a", [("a", None)], source=src, max_reference_bytes=100)
    assert info.value.code == "SESSION_REFERENCE_SELF_REFERENCE"
    msg = await prepare("t", [("b", "first"), ("b", "second")], source=src, max_reference_bytes=4096)
    assert [r["label"] for r in msg.source["references"]] == ["first"]
    with pytest.raises(SessionReferenceError) as info:
        await prepare("t", [(s, None) for s in "abcd"], source=src, max_reference_bytes=4096)
    assert info.value.code == "SESSION_REFERENCE_TOO_MANY"
    assert await prepare("t", [], source=src, max_reference_bytes=10) is None
    with pytest.raises(SessionReferenceError) as info:
        await prepare("t", [("b", None)], source=src, max_reference_bytes=10)
    assert info.value.code == "SESSION_REFERENCE_BUDGET_EXCEEDED"


def test_source_exclusions(manifest):
    cap = capture_log(UPSTREAM / "sessions/--tmp-dsh-fixture-project--/src-tricky/session.v3.jsonl")
    texts = [m.text for m in project(cap.events)]
    joined = "\n".join(texts)
    for excluded in ("system prompt secret", "reasoning-only user", "plugin-sourced", "private reasoning"):
        assert excluded not in joined
    assert "first block\nsecond block after reasoning" in texts
    assert cap.captured_through_seq == 18
    compacted = capture_log(UPSTREAM / "sessions/--tmp-other-project--/src-compacted/session.v3.jsonl")
    assert [m.checkpoint for m in project(compacted.events)] == [True, False, False]


async def test_source_mutated_after_capture_still_agrees(tmp_path):
    """The source is captured once: mutating it afterwards changes neither preview nor artifact."""
    events = [{"type": "user/message", "seq": 0, "data": {"content": [{"type": "text", "text": "q" * 900}], "source": {"kind": "user"}}}]
    cap = SessionCapture(SessionHeader("a", 3, None, {}), tuple(events), 0)

    class MutatingStore(LocalSpillStore):
        async def save_text(self, request):
            events[0]["data"]["content"][0]["text"] = "MUTATED"
            return await super().save_text(request)

    msg = await prepare("t", [("a", None)], source=CaptureSource({"a": cap}), max_reference_bytes=200, store=MutatingStore(tmp_path))
    t = read_transcript(msg.notices[0]["fullSnapshot"]["locator"])
    assert t.messages[0].text == "q" * 900
    _, problems = check_notice(msg.preview[0], msg.notices[0], t)
    assert problems == []


class SlowStore(LocalSpillStore):
    """Writes the artifact, then lingers so the caller can be cancelled after the save."""

    def __init__(self, root, saved: asyncio.Event):
        super().__init__(root)
        self.saved = saved

    async def save_text(self, request):
        ref = await super().save_text(request)
        self.saved.set()
        await asyncio.sleep(10)
        return ref


async def test_cancellation_after_save_publishes_nothing(tmp_path):
    saved = asyncio.Event()
    caps = {"a": _capture("a", [("user", "w" * 1000)])}
    published = []

    async def run():
        msg = await prepare("t", [("a", None)], source=CaptureSource(caps), max_reference_bytes=150, store=SlowStore(tmp_path, saved))
        published.append(msg)

    task = asyncio.create_task(run())
    await saved.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert published == []
    # The artifact stays (governed by expiry), as upstream.
    assert len(list(tmp_path.rglob("*-session-reference-1.txt"))) == 1


async def test_cancellation_while_save_completes_publishes_nothing(tmp_path):
    caps = {"a": _capture("a", [("user", "w" * 1000)])}

    class CancelOnSave(LocalSpillStore):
        async def save_text(self, request):
            ref = await super().save_text(request)
            asyncio.current_task().cancel()  # cancel arrives just as the save resolves
            return ref

    with pytest.raises(asyncio.CancelledError):
        await prepare("t", [("a", None)], source=CaptureSource(caps), max_reference_bytes=150, store=CancelOnSave(tmp_path))
    assert len(list(tmp_path.rglob("*.txt"))) == 1


async def test_cancellation_before_save():
    class Never:
        async def capture(self, sid):
            await asyncio.sleep(10)

    task = asyncio.create_task(prepare("t", [("a", None)], source=Never(), max_reference_bytes=100))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_truncate_with_notice_vectors():
    text, n = truncate_with_notice("😀" * 300, 100)
    assert text.endswith(f"\n[… omitted {n} UTF-8 bytes …]") and len(text.encode()) <= 100
    assert truncate_with_notice("abc", 2) == ("", 3)  # even the marker does not fit
    lone = "A\ud800B" * 200
    t2, _ = truncate_with_notice(lone, 60)
    assert "\ufffd" in t2 and "\ud800" not in t2


def test_parse_reference_text_rejects_garbage():
    with pytest.raises(ReferenceMessageError):
        parse_reference_text("hello")
