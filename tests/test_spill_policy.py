"""The tool-output spill policy: upstream cases, boundary vectors and every best-effort fallback."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from spillscope.spill import (
    RETRIEVAL_HINT,
    LocalSpillStore,
    Locator,
    SaveTextSpill,
    SpillPolicy,
    SpillRef,
    SpillStore,
    SpillStoreError,
    format_spill_notice,
    parse_spill_notice,
    retain_head_tail,
)
from spillscope.spill.policy import replacement_text

OWNER = "7c2e9d8f-ad8b-4fd8-9ecb-cb9e7b8def08"


class FailingStore(SpillStore):
    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        raise SpillStoreError("disk full")


class FixedStore(SpillStore):
    """Returns a fixed locator without writing: isolates the policy's arithmetic."""

    def __init__(self, locator: str) -> None:
        self.locator = locator
        self.saved: list[SaveTextSpill] = []

    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        self.saved.append(request)
        return SpillRef(Locator(self.locator), len(request.content.encode("utf-8", "replace")), RETRIEVAL_HINT)


async def test_upstream_tool_cases(manifest, same_length_root):
    by_locator = {a["originalLocator"]: a for a in manifest["artifacts"]}
    for case in manifest["toolCases"]:
        store = {"local": LocalSpillStore(same_length_root), "failing": FailingStore(), "none": None}[case["spillStore"]]
        policy = SpillPolicy(case["maxInlineBytes"], store)
        blocks = [{"type": "text", "text": b} for b in case["originalBlocks"]]
        if case["arm"] == "dispatch":
            out = await policy.bound_dispatch_log(
                tool_name=case["toolName"], sub_call_id=case["callId"], content=blocks, owner_session_id=OWNER
            )
        else:
            out = await policy.bound_result(
                tool_name=case["toolName"], call_id=case["callId"], content=blocks, owner_session_id=OWNER
            )
        assert out.replaced == case["replaced"], case["name"]
        assert list(out.warnings) == case["warnings"], case["name"]
        if not case["replaced"]:
            assert out.text == case["original"]["text"], case["name"]
            assert list(out.content) == blocks
        if out.ref is None:
            assert case["filesWritten"] == 0, case["name"]
            continue
        # Same file name after the random prefix, byte-identical content.
        ours = Path(out.ref.locator)
        notice = parse_spill_notice(case["finalText"]) if case["replaced"] else None
        upstream_locator = notice.locator if notice else next(
            a["originalLocator"] for a in manifest["artifacts"] if a["source"].get("callId") == case["callId"]
        )
        theirs = by_locator[upstream_locator]
        assert ours.name[13:] == theirs["encodedName"], case["name"]
        assert ours.parent.name == Path(theirs["path"]).parent.name
        assert hashlib.sha256(ours.read_bytes()).hexdigest() == theirs["sha256"], case["name"]
        assert out.ref.bytes == theirs["bytes"]
        if case["replaced"]:
            # Same replacement text, locator aside (the root has upstream's length).
            expected = case["finalText"].replace(upstream_locator, out.ref.locator)
            assert out.text == expected, case["name"]
            assert len(out.text.encode()) == case["finalTextUtf8Bytes"]


def test_notice_vectors(vectors):
    for v in vectors["spillNotice"]:
        count = v["omitted"].get("count") if v["omitted"]["kind"] == "exact" else None
        assert format_spill_notice(count, v["locator"], v["retrievalHint"]) == v["notice"]
    for v in vectors["hasSpillNotice"]:
        assert (parse_spill_notice(v["text"], "Read.") is not None) == v["result"], v


def test_retainer_vectors(vectors):
    for v in vectors["textRetainerHeadTail"]:
        kept = retain_head_tail(v["input"], v["headBytes"], v["tailBytes"])
        assert kept.text == v["text"], v
        expected = v["omittedBytes"]["count"] if v["omittedBytes"]["kind"] == "exact" else None
        assert kept.omitted_bytes == expected, v


def test_parse_notice_extracts_locator_with_dots_and_spaces():
    locator = "/spill/a. b/報告 (1). txt"
    text = "preview\n\n" + format_spill_notice(12, locator, RETRIEVAL_HINT)
    n = parse_spill_notice(text)
    assert n is not None and n.locator == locator and n.omitted_bytes == 12 and n.preview == "preview"
    assert n.hint_known


def test_parse_fork_variant():
    text = "head\n\n[...]\n\ntail\n\n(Omitted 40 bytes. Omitted 2 images. Full formatted result stored at: /x/y. " + RETRIEVAL_HINT + ")"
    n = parse_spill_notice(text)
    assert n is not None
    assert (n.omitted_bytes, n.omitted_images, n.locator, n.fork_gap) == (40, 2, "/x/y", True)


def test_leading_zero_count_is_not_a_notice():
    assert parse_spill_notice("(Omitted 0042 bytes. Full formatted result stored at: /x. Read.)") is None


# Boundary vectors: the locator below makes the notice exactly 119 bytes for N < 10000.
LOC = "/r/session-000000000000/aaaaaaaaaaaa-bash.txt"


def _notice_len(n: int) -> int:
    return len(format_spill_notice(n, LOC, RETRIEVAL_HINT).encode())


def test_cut_through_four_byte_emoji():
    text = "\U0001F600" * 100  # 400 bytes
    reserve = _notice_len(400) + 2
    cap = reserve + 10  # head 5, tail 5: both cut inside an emoji
    out = replacement_text(text, 400, SpillRef(Locator(LOC), 400, RETRIEVAL_HINT), cap)
    assert out is not None
    preview, _, notice = out.partition("\n\n")
    assert preview == "\U0001F600\U0001F600"  # 4 bytes kept each side, partial units trimmed
    assert notice == format_spill_notice(392, LOC, RETRIEVAL_HINT)
    assert len(out.encode()) <= cap


def test_cut_through_three_byte_cjk():
    text = "界" * 100  # 300 bytes
    cap = _notice_len(300) + 2 + 7  # head 4 → 3, tail 3 → 3
    out = replacement_text(text, 300, SpillRef(Locator(LOC), 300, RETRIEVAL_HINT), cap)
    assert out is not None
    assert out.startswith("界界\n\n(Omitted 294 bytes.")


def test_cap_just_above_and_below_notice():
    text = "x" * 5000
    ref = SpillRef(Locator(LOC), 5000, RETRIEVAL_HINT)
    exact = _notice_len(5000)
    # Below the notice alone: no within-cap replacement exists.
    assert replacement_text(text, 5000, ref, exact - 1) is None
    # Exactly the notice: empty preview, the notice alone.
    assert replacement_text(text, 5000, ref, exact) == format_spill_notice(5000, LOC, RETRIEVAL_HINT)
    # Just above the notice plus the join: a 1-byte preview.
    out = replacement_text(text, 5000, ref, exact + 3)
    assert out == "x\n\n" + format_spill_notice(4999, LOC, RETRIEVAL_HINT)


async def test_empty_preview_is_notice_only(tmp_path):
    store = FixedStore(LOC)
    cap = _notice_len(4000)
    out = await SpillPolicy(cap, store).bound_result(
        tool_name="ls", call_id="c", content="z" * 4000, owner_session_id="s"
    )
    assert out.replaced and out.text == format_spill_notice(4000, LOC, RETRIEVAL_HINT)


async def test_fallbacks_keep_inline_result(tmp_path):
    content = [{"type": "text", "text": "y" * 3000}]
    # no owner
    out = await SpillPolicy(100, FixedStore(LOC)).bound_result(
        tool_name="bash", call_id="c", content=content, owner_session_id=None
    )
    assert not out.replaced and out.warnings == ("spill-policy: no session owner for bash result; keeping the inline content",)
    # no store
    out = await SpillPolicy(100, None).bound_result(tool_name="bash", call_id="c", content=content, owner_session_id="s")
    assert not out.replaced and list(out.content) == content
    # failed save, through a real SpillStoreError from the local backend (root is a file)
    f = tmp_path / "file"
    f.write_text("")
    out = await SpillPolicy(100, LocalSpillStore(f)).bound_result(
        tool_name="bash", call_id="c", content=content, owner_session_id="s"
    )
    assert not out.replaced and out.warnings[0].startswith("spill-policy: saveText failed for bash: Error: spill save failed")
    # notice alone over the cap: the file was written and stays (orphan)
    store = LocalSpillStore(tmp_path / "root")
    out = await SpillPolicy(8, store).bound_result(tool_name="bash", call_id="c", content=content, owner_session_id="s")
    assert not out.replaced and out.ref is not None and Path(out.ref.locator).read_text() == "y" * 3000


async def test_read_nested_and_non_text_are_untouched():
    store = FixedStore(LOC)
    policy = SpillPolicy(10, store)
    big = "r" * 500
    assert not (await policy.bound_result(tool_name="read", call_id="c", content=big, owner_session_id="s")).replaced
    assert not (await policy.bound_result(tool_name="bash", call_id="c", content=big, owner_session_id="s", nested=True)).replaced
    mixed = [{"type": "text", "text": big}, {"type": "image", "data": "..."}]
    assert not (await policy.bound_result(tool_name="bash", call_id="c", content=mixed, owner_session_id="s")).replaced
    assert store.saved == []
    # The dispatch-log arm bounds read too, with label "dispatch".
    out = await policy.bound_dispatch_log(tool_name="read", sub_call_id="c:ptc:1", content=big, owner_session_id="s")
    assert store.saved[0].source.label == "dispatch"
    assert not out.replaced  # cap 10 is below any notice


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_invalid_caps_rejected(bad):
    with pytest.raises(ValueError):
        SpillPolicy(bad)
