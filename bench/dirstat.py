"""Is `lstat` by full path the superlinear part of scanning a wide session dir?

    python bench/dirstat.py [--n 50000] [--repeat 3]

Writes one dir of n and one of 10n files (as ``bench/hostile.py``'s "artifacts per root"),
then, each in a fresh process with the cyclic GC off, times (CPU, user + system) the ways
the scan could list and ``lstat`` them: ``scandir(path)`` + ``DirEntry.stat`` (an ``lstat``
by full path; what ``inspect/scan.py`` does), ``scandir(fd)`` + ``DirEntry.stat`` (an
``fstatat(dirfd, name)``), each with the entries sorted by name before the stats or stat'ed in
directory order and sorted after. It prints t(10n)/t(n) per way: if the fd-relative way were
linear where the path way is not, the path walk would be the cause.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

WAYS = ("path-sorted", "fd-sorted", "path-dirorder", "fd-dirorder")

_CHILD = r"""
import gc, os, resource, sys
gc.disable()
d, way = sys.argv[1], sys.argv[2]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_stime
t0, s0 = cpu()
fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC) if way.startswith("fd") else None
it = os.scandir(fd if fd is not None else d)
if way.endswith("sorted"):
    out = [(e, e.stat(follow_symlinks=False)) for e in sorted(it, key=lambda e: e.name)]
else:
    out = sorted(((e, e.stat(follow_symlinks=False)) for e in it), key=lambda t: t[0].name)
if fd is not None:
    os.close(fd)
t1, s1 = cpu()
print(f"{t1 - t0:.4f} {s1 - s0:.4f} {len(out)}")
"""


def _make(d: str, n: int) -> None:
    os.makedirs(d, mode=0o700)
    for i in range(n):
        fd = os.open(f"{d}/{i:012x}-bash.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.write(fd, b"x")
        os.close(fd)


def _time(d: str, way: str, repeat: int) -> tuple[float, float]:
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _CHILD, d, way], capture_output=True, text=True, check=True).stdout.split()
        best = min(best, (float(out[0]), float(out[1])))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="spillscope-dirstat-")
    try:
        dirs = {k: os.path.join(tmp, str(k)) for k in (args.n, 10 * args.n)}
        for k, d in dirs.items():
            _make(d, k)
        for way in WAYS:
            (t1, s1), (t10, s10) = (_time(dirs[k], way, args.repeat) for k in dirs)
            print(f"{way:14} n={args.n:>7}: {t1:6.3f} s (sys {s1:5.3f})  10n: {t10:6.3f} s (sys {s10:5.3f})"
                  f"  ratio {t10 / t1:5.1f}  sys ratio {s10 / max(s1, 1e-3):5.1f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
