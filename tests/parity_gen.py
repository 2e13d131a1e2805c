"""Random parity cases for a differential run against the reference implementation.

Each case is one JSON object with an ``op``: ``retain`` (TextRetainer head/tail),
``policy`` (the tool spill replacement, with valid and invalid caps as JavaScript
numbers), ``sweep`` (the local backend's start-up sweep: ``cleanupPeriodDays`` as a JSON
value — absent, ``null``, 0, whole days — over files of every age, in session dirs and not), ``has`` (hasSpillNotice on notice variants), ``reference`` (session-reference
preparation: config and reference validation, retention, notices, saved transcripts) and
``scrub`` (the replay locator patterns). Texts mix BOMs at cut points, lone surrogates,
astral and combining characters, CRLF and controls.

``python tests/parity_gen.py SEED N`` prints N cases. The recorded vectors in
``tests/fixtures/parity/`` are such cases with the reference's answer beside each,
obtained by feeding the same lines to the reference modules (run unmodified under
Node 20 outside this repository); ``tests/test_parity.py`` replays them.
"""
import json
import random
import sys

PIECES = ["a", "b", "x", "\ufeff", "\ufeff", "é", "e\u0301", "界", "😀", "\ud800", "\udc00", "\udbff", "\r\n", "\n", "\r",
          "\x00", "\x1b", "\u2028", "\u2029", "\x7f", "<", '"', "\\", " ", "\t", "🏳️‍🌈", "\uffff", "\ufffd"]

def rtext(r, n=None):
    n = r.randint(0, 40) if n is None else n
    out = []
    for _ in range(n):
        p = r.choice(PIECES)
        out.append(p * r.choice([1, 1, 1, 2, 7]) if p.isascii() and p.isalnum() else p)
    if r.random() < 0.3:
        out.insert(0, "\ufeff")
    return "".join(out)

def big_text(r):
    base = rtext(r, r.randint(0, 200))
    if r.random() < 0.5:
        # BOMs scattered, some right where a cut may land
        k = r.randint(0, len(base))
        base = base[:k] + "\ufeff" * r.randint(1, 3) + base[k:]
    if r.random() < 0.4:
        base = "\ufeff" + "x" * r.randint(0, 900) + base
    return base

def cap_case(r):
    c = r.random()
    if c < 0.55: return {"cap": str(r.randint(0, 1500))}
    if c < 0.65: return {"cap": f"{r.randint(0, 1500)}.0", "pyfloat": True}
    if c < 0.72: return {"cap": f"{r.randint(0, 1500)}.5", "pyfloat": True}
    if c < 0.78: return {"cap": str(-r.randint(1, 10))}
    if c < 0.82: return {"cap": str(r.choice([2**53, 2**53 + 1, 2**53 + 1000, 10**400, -(10**400)]))}
    if c < 0.86: return {"cap": r.choice(["NaN", "Infinity", "-Infinity", "1e300", "-0"]), "pyfloat": True}
    if c < 0.90: return {"capRaw": r.choice([True, False, "400", [], {}])}
    return {}  # absent: the policy is off

HINT = "Use read with offset/limit, or grep this path to search within it."
LOCS = ["/tmp/dsh-spill-AbC123/session-c22bc3f1d2af/8a7b6c5d4e3f-bash.txt",
        "C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123\\session-c22bc3f1d2af\\8a7b6c5d4e3f-bash.txt",
        "/r/a. b/x.txt", "/r/報告 (1).txt", "s3://bucket/prefix/session-c22bc3f1d2af/x-y.txt", ""]

def notice_text(r):
    parts = []
    if r.random() < 0.6:
        parts.append(rtext(r, r.randint(0, 6)))
        if r.random() < 0.3:
            parts.append("\n\n[...]\n\n" + rtext(r, 3))
        parts.append(r.choice(["\n\n", "\n", "", "\n\n\n", " "]))
    n = r.choice(["0", "5", "0042", "-0", "1e3", "9007199254740991", "9007199254740992", "12345678901234567890", "", " 5", "5 ", "٣"])
    omission = r.choice([f"Omitted {n} bytes.", "", "More bytes were omitted.", f"Omitted {n} bytes. Omitted {r.randint(0, 3)} images.",
                         "Omitted images.", "More bytes were omitted. Omitted 1 images.", "Omitted 5 bytes ", "omitted 5 bytes."])
    loc = r.choice(LOCS + ["/x. y", "/x", "a)b", "(Omitted 1 bytes. Full formatted result stored at: /q. z)"])
    hint = r.choice([HINT, "Read.", "", "Read it.\n\n(additional guidance)"])
    sep = r.choice([". ", ". ", ".", " "])
    close = r.choice([")", ")", "", ") ", "))"])
    parts.append(f"({omission} Full formatted result stored at: {loc}{sep}{hint}{close}")
    if r.random() < 0.2:
        parts.append("\n\n(" + rtext(r, 3) + ")")
    if r.random() < 0.1:
        parts.insert(0, "(Omitted 3 bytes. Full formatted result stored at: /first. Read.)\n\n")
    return "".join(parts)

def ref_case(r):
    sessions = {}
    ids = ["s", "src/會話 ~", "\ud800", "t2", "", "a"]
    for sid in ids:
        msgs = []
        for _ in range(r.randint(0, 6)):
            msgs.append({"role": r.choice(["user", "assistant"]), "text": big_text(r) or "q", "checkpoint": False})
            if msgs[-1]["role"] == "user" and r.random() < 0.15: msgs[-1]["checkpoint"] = True
        sessions[sid] = {"messages": msgs, "cwd": r.choice([None, "/w", "C:\\w"]), "seq": r.choice([None, 0, 7])}
    def one_ref():
        c = r.random()
        sid = r.choice(ids)
        if c < 0.6: return {"sessionId": sid}
        if c < 0.75: return {"sessionId": sid, "label": r.choice(["L", "", "<b>", "\ufeffx"])}
        if c < 0.80: return {"sessionId": sid, "label": None}
        if c < 0.84: return {"sessionId": sid, "label": r.choice([1, True, [], {}])}
        if c < 0.87: return {"sessionId": r.choice([None, 1, [], {}])}
        if c < 0.90: return r.choice([None, "s", 1, True])
        if c < 0.92: return ["s"]
        if c < 0.95: return {"label": "x"}
        return {"sessionId": "target"}
    refs = [one_ref() for _ in range(r.choice([0, 1, 1, 1, 2, 3, 4]))]
    b = r.random()
    if b < 0.7: budget = str(r.choice([r.randint(1, 400), r.randint(100, 3000), r.randint(60, 200)]))
    elif b < 0.76: budget = f"{r.randint(1, 800)}.0"
    elif b < 0.80: budget = f"{r.randint(1, 800)}.5"
    elif b < 0.85: budget = r.choice(["0", "-5", "9007199254740992", "9007199254740991", "1e300", "NaN", "Infinity"])
    else: budget = None
    config = {}
    if budget is not None: config["maxReferenceBytes"] = budget
    if r.random() < 0.15: config["maxReferences"] = r.choice(["0", "1", "2", "3", "4", "2.0", "1.5", "-1"])
    return {"op": "reference", "config": config, "target": "target", "refs": refs, "sessions": sessions}

def sweep_case(r):
    """One start-up sweep: the store's ``cleanupPeriodDays`` as JSON gives it, and files aged
    around every period (never within a minute of a cutoff: the clock moves between the
    planting and the sweep). The answer is the sorted ``dir/name`` list the sweep deleted."""
    days = r.choice(["absent", None, None, 0, 1, 7, 30, 30, 45])
    files = []
    for i in range(r.randint(1, 6)):
        age = r.choice([0.5, 2, 6, 8, 29, 31, 44, 46, 90]) + r.uniform(-0.4, 0.4)
        files.append({"dir": r.choice(["session-c22bc3f1d2af", "session-0123456789ab", "not-a-session"]),
                      "name": f"{i:012x}-bash.txt", "ageDays": round(age, 4)})
    out = {"op": "sweep", "files": files}
    if days != "absent":
        out["cleanupPeriodDays"] = days
    return out

def case(r):
    if r.random() < 0.08:
        return sweep_case(r)
    if r.random() < 0.3:
        return {"op": "scrub", "text": scrub_text(r)}
    c = r.random()
    if c < 0.25:
        t = big_text(r)
        return {"op": "retain", "text": t, "head": r.randint(0, len(t) * 2 + 3), "tail": r.randint(0, len(t) * 2 + 3)}
    if c < 0.45:
        return {"op": "policy", "text": big_text(r) * r.choice([1, 1, 3]), "locator": r.choice(LOCS[:4]), "hint": HINT, **cap_case(r)}
    if c < 0.65:
        return {"op": "has", "text": notice_text(r)}
    return ref_case(r)


def scrub_text(r):
    sep = r.choice(["/", "\\", "\\\\", "\\\\\\\\", "//", "/\\"])
    root = r.choice(["/tmp", "C:" + sep + "t", sep + "t", "c:" + sep + "tmp", "{{cwd}}" + sep + ".spill", "/tmp/unrelated", "D:", "/var/tmp", sep + "tmp", "{{cwd}}" + sep + ".spill"])
    mid = r.choice(["dsh-acp-snap-012345678", "dsh-acp-snap-01234567", "dsh-acp-snapshot-spill", "dsh-spill-AbC123", "dsh-acp-snap-0123456789", "", "dsh-acp-snap-abcdef012", "dsh-acp-snapshot-spill"])
    parts = [root] + ([mid] if mid and not root.startswith("{{cwd}}") else []) + [r.choice(["session-c22bc3f1d2af", "session-C22BC3F1D2AF", "session-c22bc3f1d2a", "session-c22bc3f1d2af", "session-c22bc3f1d2af"]),
             r.choice(["8a7b6c5d4e3f", "8a7b6c5d4e3", "8a7b6c5d4e3f"]) + "-" + r.choice(["bash.txt", "session-reference-1.txt", "a~002Fb.txt", "x", "報告.txt", "a b.txt", "~", "."])]
    path = sep.join(parts)
    after = r.choice([". Use read with offset/limit, or grep this path to search within it.", '"', '\\"', '\\\\\\"', ")", " ", "\n", "\ufeff", "\x1c", "\x85", "\u00a0",
                      "", ".", ". Use read", "\n\n", "é", ",", "\\"])
    before = r.choice(["Full formatted result stored at: ", '"locator":"', '\\"locator\\":\\"', "", "x", "(", "C:"])
    s = before + path + after
    if r.random() < 0.3:
        s = s + " and " + s
    return s

if __name__ == "__main__":
    seed, n = int(sys.argv[1]), int(sys.argv[2])
    r = random.Random(seed)
    for _ in range(n):
        sys.stdout.write(json.dumps(case(r)) + "\n")
