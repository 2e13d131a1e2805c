#!/usr/bin/env python3
"""Reliability figures from one command: the adversarial corpus, fuzzing, faults,
churn and the read-only audit.

    python bench/reliability.py            # the long version (about 5 minutes)
    python bench/reliability.py --quick    # the short version CI runs
    python bench/reliability.py --write docs/reliability.md

Exit status 0 only when every corpus item gave a located finding, no command or view
crashed or hung, fuzzing found nothing, every fault ended intact-or-raised, churn ended
with the view equal to the disk, and nothing was opened for writing under a root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "tests")]

from corpus import build  # noqa: E402

PY = sys.executable
MEMORY_LIMIT = 1 << 30  # RLIMIT_AS for every command run on the corpus


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _unprivileged(cmd: list[str]) -> list[str]:
    """As root, drop the permission override so permission-denied cases are real."""
    if os.geteuid() == 0 and shutil.which("setpriv"):
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]
    return cmd


@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)
    ok: bool = True

    def add(self, text: str, ok: bool = True) -> None:
        self.lines.append(text)
        self.ok = self.ok and ok
        print(("  " if ok else "  FAIL ") + text, flush=True)


def run_cli(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_unprivileged([PY, "-m", "spillscope", *args]), capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limited)


def corpus_section(tmp: Path, quick: bool) -> Section:
    sec = Section("Adversarial corpus")
    print(f"\n== {sec.title} ==")
    root, logs, items = build(tmp / "corpus", huge_line_bytes=(64 << 20) if quick else (2 << 30), quick=quick)
    t = time.perf_counter()
    proc = run_cli(["verify", str(root), "--logs", str(logs), "--json"])
    elapsed = time.perf_counter() - t
    crashed = "Traceback" in proc.stderr or proc.returncode not in (0, 1)
    sec.add(f"verify over the corpus: exit {proc.returncode} in {elapsed:.1f} s (memory limit {MEMORY_LIMIT >> 20} MiB)", not crashed)
    findings = json.loads(proc.stdout)["findings"] if not crashed else []
    missing = []
    for it in items:
        hit = [f for f in findings if (f["path"] == it.path and (it.line is None or f["line"] == it.line))
               or (it.line is None and f["locator"] == it.path)]
        located = all((f["line"] is not None) if it.line is not None else True for f in hit)
        if not hit or not located:
            missing.append(it.name)
    sec.add(f"corpus items: {len(items)}; with a located finding: {len(items) - len(missing)}", not missing)
    if missing:
        sec.add("no finding for: " + ", ".join(missing), False)
    proc = run_cli(["ls", str(root), "--logs", str(logs), "--json"])
    sec.add(f"ls --json over the corpus: exit {proc.returncode}", proc.returncode == 0 and "Traceback" not in proc.stderr)
    forged = 0
    for cmd in (["ls", str(root)], ["ls", str(root), "--logs", str(logs)], ["verify", str(root), "--logs", str(logs)]):
        p = run_cli(cmd)
        forged += sum(line.lstrip().startswith("FORGED") for line in p.stdout.splitlines()) + ("Traceback" in p.stderr)
    sec.add(f"human ls and verify over the corpus: {forged} forged rows (a file name's newline starting a row)", forged == 0)
    bad = []
    artifacts = [it for it in items if it.line is None]
    for it in artifacts:
        for extra in ([], ["--json"]):
            try:
                p = run_cli(["cat", it.path, *extra], timeout=60)
            except subprocess.TimeoutExpired:
                bad.append(f"{it.name} (hang)")
                continue
            if p.returncode not in (0, 1, 2) or "Traceback" in p.stderr:
                bad.append(f"{it.name} (exit {p.returncode})")
    sec.add(f"cat (plain and --json) on {len(artifacts)} corpus artifacts: {len(artifacts) * 2 - len(bad)} clean exits, "
            f"{len(bad)} crashes or hangs", not bad)
    if bad:
        sec.add("crashed: " + ", ".join(bad), False)
    tui = subprocess.run(_unprivileged([PY, str(HERE / "reliability.py"), "--tui-corpus", str(root), str(logs)]),
                         capture_output=True, text=True, timeout=600, preexec_fn=_limited)
    m = re.search(r"showed (\d+) tree items.*; (\d+) crashes", tui.stdout)
    ok = tui.returncode == 0 and m is not None and m.group(2) == "0"
    sec.add(f"TUI over the corpus: {m.group(0) if m else 'did not finish: ' + tui.stderr[-500:]}", ok)
    return sec


async def _tui_corpus(root: str, logs: str) -> None:
    from spillscope.frontends.tui.app import SpillscopeApp
    from spillscope.frontends.tui.screens import Goto, ReaderScreen

    app = SpillscopeApp(root, logs, watch=False)
    opened = total = 0
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.verified:
            await pilot.pause(0.05)
        tree = app.query_one("#tree")
        stack, nodes = [tree.root], []
        while stack:
            n = stack.pop()
            stack.extend(n.children)
            if n.data is not None and n.data.kind in ("artifact", "reference", "tool-spill"):
                nodes.append(n)
        readers: set[str] = set()
        for node in nodes:
            total += 1
            app.show_detail(node.data)
            # One reader per artifact: 8,000 notices naming one transcript are one read.
            art = node.data.obj if node.data.kind == "artifact" else getattr(node.data.obj, "artifact", None)
            key = art.path if art is not None else f"{node.data.kind}:{node.data.key}"
            if key in readers:
                continue
            readers.add(key)
            await pilot.pause(0)
            app.open_reader(node.data)
            for _ in range(100):
                await pilot.pause(0.02)
                if isinstance(app.screen, ReaderScreen):
                    opened += 1
                    # Read ahead as a user would: past whatever is malformed further on.
                    app.screen.goto(Goto("message", 1 << 20))
                    await pilot.press("end", "n", "pagedown")
                    await pilot.pause(0.05)
                    app.pop_screen()
                    break
                if not any(w.is_running for w in app.workers):
                    break
    crashed = 1 if app._exception is not None else 0
    print(f"showed {total} tree items; opened {opened} readers (one per artifact) and read each to its end (the rest "
          f"refused with a message: expired, unreadable from the start, not a file); {crashed} crashes")


def fuzz_section(quick: bool) -> Section:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import properties as P

    sec = Section("Fuzzing")
    print(f"\n== {sec.title} ==")
    n = 300 if quick else 5000
    cfg = settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    counts: dict[str, int] = {}

    def bump(key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    @given(st.binary(max_size=4000))
    def t_random(data: bytes) -> None:
        bump("t-random")
        P.check_transcript_bytes(data)

    @given(P.mutated_transcripts())
    def t_mut(data: bytes) -> None:
        bump("t-mut")
        P.check_transcript_bytes(data)

    @given(st.binary(max_size=4000))
    def log(data: bytes) -> None:
        bump("log")
        P.check_log_bytes(data)

    @given(st.lists(P.conversation_items, max_size=4), P.notices)
    def notice(conversation: list, notice_value: dict) -> None:  # type: ignore[type-arg]
        bump("notice")
        P.check_notice_values(conversation, notice_value)

    props = {
        "transcript reader, random bytes": t_random,
        "transcript reader, mutations of a valid artifact": t_mut,
        "log reader, random bytes": log,
        "notice checker, random notices and previews": notice,
    }
    failures = 0
    for (name, prop), key in zip(props.items(), ("t-random", "t-mut", "log", "notice")):
        try:
            cfg(prop)()
            sec.add(f"{name}: {counts.get(key, 0)} examples, 0 failures")
        except Exception as exc:  # a falsifying example
            failures += 1
            sec.add(f"{name}: FAILED after {counts.get(key, 0)} examples: {exc!r}"[:400], False)
    try:
        import atheris  # noqa: F401

        seconds = 10 if quick else 120
        seeds = Path(tempfile.mkdtemp(prefix="spillscope-fuzz-"))
        (seeds / "valid").write_bytes(P.VALID)
        p = subprocess.run([PY, str(REPO / "fuzz" / "fuzz_transcript.py"), f"-max_total_time={seconds}",
                            "-rss_limit_mb=2048", str(seeds)], capture_output=True, text=True, timeout=seconds + 120)
        runs = re.search(r"Done (\d+) runs", p.stderr)
        sec.add(f"atheris (coverage-guided), {seconds} s: {runs.group(1) if runs else '?'} runs, "
                f"{'0 crashes' if p.returncode == 0 else 'CRASH: ' + p.stderr[-300:]}", p.returncode == 0)
        shutil.rmtree(seeds, ignore_errors=True)
    except ImportError:
        sec.add("atheris not installed: coverage-guided run skipped (pip install atheris)")
    return sec


def _save_many(args: tuple[str, int, int]) -> list[tuple[str, int, str]]:
    root, worker, count = args
    from spillscope.spill import LocalSpillStore, SaveTextSpill, SpillOwner, ToolSource

    store = LocalSpillStore(root)
    out = []
    for i in range(count):
        content = f"worker {worker} save {i} " * (i + 1)
        ref = store.save_text_sync(SaveTextSpill(SpillOwner("shared"), ToolSource("bash", f"c{worker}-{i}", "result"), "bash.txt", content))
        out.append((ref.locator, ref.bytes, content))
    return out


def faults_section(tmp: Path, quick: bool) -> Section:
    from spillscope.spill import LocalSpillStore, SaveTextSpill, SpillOwner, SpillStoreError, ToolSource

    sec = Section("Faults")
    print(f"\n== {sec.title} ==")

    def req(content: str) -> SaveTextSpill:
        return SaveTextSpill(SpillOwner("s"), ToolSource("bash", "c", "result"), "bash.txt", content)

    def mount(path: Path, opts: str) -> bool:
        path.mkdir(parents=True, exist_ok=True)
        return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True).returncode == 0

    # ENOSPC
    tiny = tmp / "tiny"
    if mount(tiny, "size=256k"):
        try:
            store, saved, refused, bad = LocalSpillStore(tiny), 0, 0, 0
            for i in range(60):
                content = ("payload %d " % i) * 700
                try:
                    ref = store.save_text_sync(req(content))
                    saved += 1
                    bad += Path(ref.locator).read_bytes() != content.encode()
                except SpillStoreError:
                    refused += 1
            files = list(tiny.rglob("*.txt"))
            sec.add(f"ENOSPC (256 KiB tmpfs, 60 saves of ~7 KB): {saved} saved intact, {refused} raised, "
                    f"{bad} reported saved but not whole, {len(files) - saved} stray files", bad == 0 and len(files) == saved and refused > 0)
        finally:
            subprocess.run(["umount", str(tiny)])
    else:
        sec.add("ENOSPC: cannot mount a tmpfs here (not root?): skipped")
    ro = tmp / "ro"
    if mount(ro, "ro,size=64k"):
        try:
            try:
                LocalSpillStore(ro).save_text_sync(req("x"))
                sec.add("read-only root: a save claimed success", False)
            except SpillStoreError as exc:
                sec.add(f"read-only root: raised SpillStoreError ({exc.cause.__class__.__name__}: {getattr(exc.cause, 'strerror', '')})")
        finally:
            subprocess.run(["umount", str(ro)])
    # Root removed mid-save.
    root = tmp / "vanishing"
    store = LocalSpillStore(root)
    stop = threading.Event()

    def remover() -> None:
        while not stop.is_set():
            shutil.rmtree(root, ignore_errors=True)
            time.sleep(0.0005)

    th = threading.Thread(target=remover)
    th.start()
    ok = raised = bad = 0
    n = 300 if quick else 3000
    for i in range(n):
        content = f"save {i} " * 50
        try:
            ref = store.save_text_sync(req(content))
        except SpillStoreError:
            raised += 1
            continue
        ok += 1
        bad += ref.bytes != len(content.encode())
    stop.set()
    th.join()
    leftovers = [p for p in root.rglob("*.txt")] if root.exists() else []
    torn = sum(1 for p in leftovers if not re.fullmatch(rb"(save \d+ ){50}", p.read_bytes()))
    sec.add(f"root removed mid-save ({n} saves against a deleting thread): {ok} completed, {raised} raised, "
            f"{bad} wrong sizes, {torn} torn files on disk", bad == 0 and torn == 0)
    # 8 processes into one session.
    shared = tmp / "shared"
    per = 25 if quick else 200
    with multiprocessing.get_context("fork").Pool(8) as pool:
        results = [r for chunk in pool.map(_save_many, [(str(shared), w, per) for w in range(8)]) for r in chunk]
    distinct = len({loc for loc, _, _ in results})
    intact = sum(1 for loc, size, content in results if Path(loc).read_bytes() == content.encode() and size == len(content.encode()))
    on_disk = len(list(shared.rglob("*.txt")))
    sec.add(f"8 processes × {per} saves into one session: {len(results)} saves, {distinct} distinct files, {intact} intact, "
            f"{on_disk} on disk", distinct == len(results) == intact == on_disk)
    return sec


def churn_section(tmp: Path, quick: bool) -> Section:
    from spillscope.inspect.watch.root import watch_root

    sec = Section("Churn")
    print(f"\n== {sec.title} ==")
    total = 2000 if quick else 10000
    root = tmp / "churn"
    dirs = [root / f"session-{i:012x}" for i in range(10)]
    for d in dirs:
        d.mkdir(parents=True)
    stop = threading.Event()
    state: dict[str, int] = {}
    events = 0

    def watcher() -> None:
        nonlocal events
        for batch in watch_root(root, stop=stop, tick_ms=50):
            for ev in batch:
                events += 1
                if ev.event in ("added", "modified"):
                    state[ev.path] = 1
                elif ev.event == "deleted":
                    state.pop(ev.path, None)

    th = threading.Thread(target=watcher)
    th.start()
    time.sleep(0.5)
    created = []
    for i in range(total):
        p = dirs[i % 10] / f"{i:012x}-bash.txt"
        p.write_text("x")
        created.append(p)
        if i % 3 == 0:
            created[i // 2].unlink(missing_ok=True)
    for p in created[: total // 2]:
        p.unlink(missing_ok=True)
    disk = {str(p) for d in dirs for p in d.iterdir()}
    deadline = time.time() + 30
    while time.time() < deadline and set(state) != disk:
        time.sleep(0.1)
    stop.set()
    th.join(timeout=10)
    diff = len(set(state) ^ disk)
    sec.add(f"watcher: {total} created and {total - len(disk)} deleted during a watch, {events} events; "
            f"final view vs disk difference: {diff}", diff == 0)
    p = subprocess.run([PY, str(HERE / "reliability.py"), "--tui-churn", str(root), str(total)], capture_output=True,
                       text=True, timeout=600)
    m = re.search(r"difference (\d+)", p.stdout)
    sec.add(f"TUI: {p.stdout.strip() or p.stderr[-400:]}", p.returncode == 0 and m is not None and m.group(1) == "0")
    return sec


async def _tui_churn(root: str, total: int) -> None:
    from spillscope.frontends.tui.app import SpillscopeApp

    app = SpillscopeApp(root, None)
    rootp = Path(root)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.verified:
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        dirs = sorted(p for p in rootp.iterdir())
        made = []
        for i in range(total):
            p = dirs[i % len(dirs)] / f"{i + 10**6:012x}-grep.txt"
            p.write_text("y")
            made.append(p)
            if i % 2:
                made[i // 2].unlink(missing_ok=True)
            if i % 200 == 0:
                await pilot.pause(0)
        tree = app.query_one("#tree")

        def shown() -> set[str]:
            # A big root opens with its sessions collapsed and builds their leaves on
            # expand; each session node holds the leaves it would show, built or not.
            out = set()
            for session in tree.root.children:
                out.update(d.key for d in session.data.obj["children"] if d.kind == "artifact")
            return out

        disk = {str(p) for d in dirs for p in d.iterdir()}
        for _ in range(600):
            await pilot.pause(0.05)
            if shown() == disk and app.verified:
                break
        diff = len(shown() ^ disk)
    print(f"{total} created/deleted while the app watched; tree vs disk difference {diff}")


AUDIT = r'''
import os, sys
roots = [os.path.realpath(p) for p in sys.argv[1:3]]
writes, follows = [], []
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = os.fsdecode(args[0]) if isinstance(args[0], bytes) else args[0]
        full = os.path.abspath(path)
        if any(full == r or full.startswith(r + "/") for r in roots):
            mode, flags = args[1], args[2]
            if (isinstance(flags, int) and flags & WRITE) or (isinstance(mode, str) and any(c in mode for c in "wax+")):
                writes.append(full)
            if isinstance(flags, int) and not flags & os.O_NOFOLLOW and not os.path.isdir(full):
                follows.append(full)
sys.addaudithook(hook)
from spillscope.frontends.cli.main import main
import io, contextlib
for argv in [["ls", sys.argv[1], "--logs", sys.argv[2], "--json"], ["verify", sys.argv[1], "--logs", sys.argv[2], "--json"]] + \
            [["cat", p, "--json"] for p in sys.argv[3:]]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
print(len(writes), len(set(follows)))
'''


def safety_section(tmp: Path) -> Section:
    sec = Section("Safety")
    print(f"\n== {sec.title} ==")
    root, logs, items = build(tmp / "audit", huge_line_bytes=1 << 20)
    arts = [it.path for it in items if it.line is None]
    before = {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in [*root.rglob("*"), *logs.rglob("*")]}
    p = subprocess.run(_unprivileged([PY, "-c", AUDIT, str(root), str(logs), *arts]), capture_output=True, text=True, timeout=600)
    writes, follows = (int(x) for x in p.stdout.split()) if p.returncode == 0 else (-1, -1)
    sec.add(f"audit hook over ls, verify and cat of {len(arts)} artifacts: {writes} opens for writing under the root or logs",
            writes == 0)
    sec.add(f"file opens under the root without O_NOFOLLOW (a symlink could be followed): {follows}", follows == 0)
    after = {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in [*root.rglob("*"), *logs.rglob("*")]}
    sec.add(f"root and logs unchanged after every command: {before == after}", before == after)
    return sec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", metavar="FILE", help="write the figures as Markdown")
    ap.add_argument("--tui-corpus", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--tui-churn", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tui_corpus:
        asyncio.run(_tui_corpus(*args.tui_corpus))
        return 0
    if args.tui_churn:
        asyncio.run(_tui_churn(args.tui_churn[0], int(args.tui_churn[1])))
        return 0
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="spillscope-reliability-") as d:
        tmp = Path(d)
        os.chmod(tmp, 0o755)
        sections = [corpus_section(tmp, args.quick), fuzz_section(args.quick), faults_section(tmp, args.quick),
                    churn_section(tmp, args.quick), safety_section(tmp)]
    ok = all(s.ok for s in sections)
    print(f"\n{'ALL PASSED' if ok else 'FAILURES'} in {time.time() - started:.0f} s")
    if args.write:
        cmd = "python bench/reliability.py" + (" --quick" if args.quick else "")
        out = [f"# Reliability\n\nProduced by `{cmd} --write {args.write}` on {time.strftime('%Y-%m-%d')} "
               f"({'short' if args.quick else 'long'} version; CI runs `--quick` through tests/test_reliability.py).\n"]
        for s in sections:
            out.append(f"\n## {s.title}\n")
            out += [f"- {line}" for line in s.lines]
        out.append(f"\n**Result: {'every check passed' if ok else 'FAILURES, see above'}.**\n")
        # The scaling table (bench/scaling.py --write) lives in the same file: keep it.
        old = Path(args.write).read_text() if Path(args.write).exists() else ""
        at = old.find("\n## Scaling\n")
        Path(args.write).write_text("\n".join(out) + "\n" + (old[at:] if at >= 0 else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
