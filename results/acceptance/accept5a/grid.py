import json, collections
rows = {}
for line in open("/tmp/accept5a/results.jsonl"):
    try:
        r = json.loads(line)
    except Exception:
        continue
    rows[(r["prog"], r["cfg"])] = r
import sys
from harness import CONFIGS as CF
CF = CF + [c for c in sys.argv[1:]]
progs = sorted({p for p, _ in rows})
print("| program | " + " | ".join(CF) + " |")
print("|---|" + "---|" * len(CF))
tot = collections.Counter(); bad = []
for p in progs:
    cells = []
    for c in CF:
        r = rows.get((p, c))
        cells.append(r["status"] if r else "")
        if r:
            tot[r["status"]] += 1
            if r["status"] != "ok":
                bad.append(f"- {p} {c}: {r['status']} {r['detail'][:300]}")
    print(f"| {p} | " + " | ".join(cells) + " |")
print()
print("totals: " + ", ".join(f"{k} {v}" for k, v in tot.items()))
print()
print("\n".join(bad))
