"""Scaling benchmark: every input dimension at n and 10n, timed through the real CLI.

    python bench/scaling.py [--scale S] [--only NAME] [--write docs/reliability.md]

For each dimension of ``bench/hostile.py`` it writes a root and logs at n and 10n, times
``verify --json`` (and ``cat --json`` where the dimension is a transcript's content) and
prints the ratio t(10n)/t(n). Linear work gives about 10; the issue's bar is <= 12.
Each time is the command's CPU time (user + system, from ``getrusage``), best of
``--repeat`` runs: on 2 CPUs shared by a team, wall time mostly measures the neighbours.
The process start-up (measured in the same run with an empty root) is subtracted from
every time before the ratio, so the ratio is the work's own.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hostile  # noqa: E402

PY = sys.executable
#: Dimensions whose artifact does not grow with n (cat would time a constant).
NO_CAT = {"notices naming one artifact", "JSON nesting"}
TIMEOUT = 300.0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(args: list[str], repeat: int) -> tuple[float, int]:
    """Best CPU time (user + system) of the command: on a machine shared by a team, wall
    time measures the neighbours; the command's own CPU time measures its work."""
    best, code = float("inf"), 0
    for _ in range(repeat):
        t = _cpu()
        try:
            proc = subprocess.run([PY, "-m", "spillscope", *args], capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return float("inf"), -1
        best = min(best, _cpu() - t)
        code = proc.returncode
        if "Traceback" in proc.stderr:
            return float("nan"), proc.returncode
        if args[-1] == "--json":
            json.loads(proc.stdout)  # the output stays JSON, whatever the input
    return best, code


#: Options a dimension needs so that 10n is the same work as n, not a refusal: a log line
#: long enough to leave the CPU caches at n (t(n) >= 0.2 s of work, as the issue asks)
#: is over the default 64 MiB line limit at 10n.
EXTRA_ARGS = {name: ["--max-log-line-bytes", str(1 << 30)] for name in ("log line length", "preview length")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every base n (default 1)")
    ap.add_argument("--only", action="append", default=[], help="run only dimensions whose name contains this")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--write", type=Path, help="replace the scaling section of this markdown file")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="spillscope-scaling-"))
    rows: list[tuple[str, str, int, float, float, float]] = []
    ok = True
    try:
        empty = hostile.make_artifacts(tmp / "empty", 0)
        startup, _ = _time(["verify", str(empty.root), "--logs", str(empty.logs), "--json"], 3)
        print(f"process start-up (verify of an empty root): {startup:.3f} s CPU", flush=True)
        for name, (gen, base_n, unit) in hostile.DIMENSIONS.items():
            if args.only and not any(o in name for o in args.only):
                continue
            n = max(1, int(base_n * args.scale))
            cases = {k: gen(tmp / f"{name.replace(' ', '-')}-{k}", k) for k in (n, 10 * n)}
            # Start-up again next to this dimension's timings, the least seen so far kept:
            # one sample taken while a neighbour loads the machine (or the previous
            # dimension's root is being deleted) inflated it, and with it every ratio whose
            # t(n) is not much more than the start-up.
            startup = min(startup, _time(["verify", str(empty.root), "--logs", str(empty.logs), "--json"], 3)[0])
            extra = EXTRA_ARGS.get(name, [])
            commands = [("verify --json",
                         lambda c: ["verify", str(c.root), "--logs", str(c.logs), "--json", *extra])]
            if cases[n].cat is not None and name not in NO_CAT:
                commands.append(("cat --json", lambda c: ["cat", str(c.cat), "--json"]))
            for label, cmd in commands:
                t1, _ = _time(cmd(cases[n]), args.repeat)
                t10, _ = _time(cmd(cases[10 * n]), args.repeat)
                ratio = max(t10 - startup, 0.0) / max(t1 - startup, 1e-3)
                good = ratio <= 12 and t1 == t1 and t10 == t10
                ok = ok and good
                rows.append((name, label, n, t1, t10, ratio))
                print(f"{'  ' if good else '  FAIL '}{name:38} {label:14} n={n:>8} {unit:15} "
                      f"{t1:7.2f} s  10n {t10:7.2f} s  ratio {ratio:5.1f}", flush=True)
            for c in cases.values():
                shutil.rmtree(c.root.parent, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = ["| dimension | command | n | t(n) | t(10n) | ratio |", "|---|---|---:|---:|---:|---:|"]
    fresh = {f"| {d} | `{c}` |": f"| {d} | `{c}` | {n} {hostile.DIMENSIONS[d][2]} | {a:.2f} s | {b:.2f} s | {r:.1f} |"
             for d, c, n, a, b, r in rows}
    if args.only and args.write is not None and args.write.exists():
        # A partial run updates its rows of the recorded table and keeps the others.
        text = args.write.read_text()
        at = text.find("## Scaling\n")
        end = text.find("\n## ", at + 1) if at >= 0 else -1
        section = text[at:end] if at >= 0 and end >= 0 else text[at:] if at >= 0 else ""
        kept = [line for line in section.splitlines() if line.startswith("| ") and "` |" in line]
        merged = [fresh.pop(line[: line.index("` |") + 3], line) for line in kept]
        table += merged + list(fresh.values())
        ok = all(float(line.rsplit("|", 2)[1]) <= 12 for line in table[2:])
    else:
        table += list(fresh.values())
    print(f"process start-up, least seen in this run: {startup:.3f} s CPU")
    print("\n".join(table))
    print("ALL LINEAR" if ok else "SOME DIMENSION IS NOT LINEAR")
    if args.write is not None:
        _write_section(args.write, startup, table, ok, " ".join(sys.argv[1:]))
    return 0 if ok else 1


def _write_section(path: Path, startup: float, table: list[str], ok: bool, argv: str) -> None:
    head = "## Scaling"
    body = "\n".join([
        head, "",
        f"Produced by `python bench/scaling.py {argv}` on {time.strftime('%Y-%m-%d')} "
        "(2 CPUs shared by the team). Every input dimension of a spill root and its logs, at n and "
        "10n, through the real CLI. Times are the command's CPU time (user + system), best of the runs; "
        f"they include process start-up, and the ratio has the start-up measured in the same run ({startup:.2f} s) "
        "subtracted. Linear is 10; the bar is 12.", "",
        *table, "",
        "**Every dimension is linear.**" if ok else "**Some dimension is NOT linear.**", "",
    ])
    text = path.read_text()
    start = text.find(head + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(head))
        text = text[:start] + body + (text[end + 1 :] if end >= 0 else "")
    path.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
