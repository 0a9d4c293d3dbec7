#!/usr/bin/env python3
"""The headline tables of a published study, as Markdown, from what VERIFY.sh checks.

    study/headline.py RESULTS_DIR [--catalogue study/catalogue.toml]

RESULTS_DIR is a published campaign (results/study): map/map.json, map/tables/manifests.csv
and static.json (all regenerated from the receipts by VERIFY.sh). Prints: the catalogue's
way from candidates to audited servers; servers by outcome (why a target was not audited,
classified from the stderr lines its map row quotes); tools by what they promised;
confirmed cells by clause and by what they touched; servers that kept every promise; the
most common broken promises with an example each; declaration gaps (static vs dynamic).
Reads nothing else and runs nothing. Stdlib only.
"""
import csv
import json
import os
import re
import sys

# study/select.py would shadow the standard `select` module.
STUDY_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != STUDY_DIR] + [STUDY_DIR]
import tomllib  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

from receiptlog import why_not_started  # noqa: E402

csv.field_size_limit(1 << 30)

def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main(results: Path, catalogue: Path):
    doc = json.loads((results / "map/map.json").read_text())
    servers = doc["servers"]
    print(f"## Headline tables: {doc['campaign']}\n")

    if catalogue.is_file():
        cat = tomllib.loads(catalogue.read_text())["server"]
        studied = [s for s in cat if not s.get("fixture")]
        excluded = Counter(s["excluded"].split(":")[0].split(" (")[0] for s in studied if s.get("excluded"))
        kept = [s for s in studied if not s.get("excluded")]
        installs = Counter(s.get("install", "pending").split(":")[0] for s in kept)
        fails = Counter(s["install"].split(": ", 1)[1] for s in kept if s.get("install", "").startswith("failed"))
        print("### From candidates to audited servers\n")
        rows = [("candidates (selection rule)", len(studied)),
                ("excluded (rule, or read: not an MCP server)", sum(excluded.values())),
                ("kept", len(kept)),
                ("installed", installs.get("installed", 0)),
                ("needs install scripts (not run)", installs.get("needs_install_scripts", 0)),
                ("could not install", installs.get("failed", 0))]
        print(table(["", "servers"], rows))
        print("\nCould not install, by reason: " + ", ".join(f"{r} {n}" for r, n in fails.most_common()) + ".\n")

    fixtures = {s["id"] for s in servers if s["id"].startswith("fixture.")}
    study = [s for s in servers if s["id"] not in fixtures]
    audited = [s for s in study if s["tools"]]
    not_audited = [s for s in study if not s["tools"]]
    print("### Servers by outcome\n")
    reasons = Counter(why_not_started(" ".join(n["detail"] for n in s["not_audited"])) for s in not_audited)
    rows = [("audited", len(audited), f"{100 * len(audited) / max(1, len(study)):.1f} %")]
    rows += [(f"not audited: {r}", n, f"{100 * n / max(1, len(study)):.1f} %") for r, n in reasons.most_common()]
    print(table(["outcome", "servers", "share"], rows))
    print(f"\n{len(study)} servers (and {len(fixtures)} fixtures, not counted here).\n")

    # Tools by what they promised: each audited server's tools as first listed.
    annotated = readonly = destructive = openworld = total = 0
    manifests = results / "map/tables/manifests.csv"
    seen = set()
    if manifests.is_file():
        with manifests.open(newline="") as f:
            for row in csv.DictReader(f):
                server = row["probe"].split("/")[0]
                if server in fixtures or row["phase"] != "initial" or (server, row["tool"]) in seen:
                    continue
                seen.add((server, row["tool"]))
                total += 1
                ann = json.loads(row["annotations"] or "{}") or {}
                hints = {k: v for k, v in ann.items() if k.endswith("Hint")}
                annotated += bool(hints)
                readonly += hints.get("readOnlyHint") is True
                destructive += hints.get("destructiveHint") is True
                openworld += hints.get("openWorldHint") is False
        print("### Tools by what they promised\n")
        print(table(["tools", "count", "share"], [
            ("listed by audited servers", total, "100 %"),
            ("with any behaviour hint", annotated, f"{100 * annotated / max(1, total):.1f} %"),
            ("readOnlyHint: true", readonly, f"{100 * readonly / max(1, total):.1f} %"),
            ("destructiveHint: true", destructive, f"{100 * destructive / max(1, total):.1f} %"),
            ("openWorldHint: false", openworld, f"{100 * openworld / max(1, total):.1f} %"),
            ("no hint: graded by intent (their words)", total - annotated, f"{100 * (total - annotated) / max(1, total):.1f} %"),
        ]))
        print()

    clauses = doc["clauses"]
    by = defaultdict(Counter)
    promises = Counter()
    example = {}
    confirmed_servers = Counter()
    for s in study:
        for t in s["tools"]:
            for c in t["cells"]:
                if c["verdict"] != "confirmed":
                    continue
                confirmed_servers[s["id"]] += 1
                by[c["clause"]][c.get("touched", "?")] += 1
                rec = next(r for r in c["records"] if r["verdict"] == "confirmed")
                basis = rec.get("evidence", {}).get("basis", "?")
                basis = re.sub(r" \(.*", "", basis)
                key = (c["clause"], basis)
                promises[key] += 1
                example.setdefault(key, f"{s['id']} × {t['name']}: {c['reason'][:140]}")
    touched = ["secrets", "user_files", "system", "network", "programs", "model", "own_state"]
    print("### Confirmed cells by clause and by what they touched\n")
    rows = []
    for clause in clauses:
        if by[clause]:
            rows.append([clause, sum(by[clause].values())] + [by[clause].get(t, 0) for t in touched])
    rows.append(["**all**", sum(sum(c.values()) for c in by.values())] +
                [sum(by[c].get(t, 0) for c in by) for t in touched])
    print(table(["clause", "confirmed"] + touched, rows))
    print()

    kept = [s for s in audited if confirmed_servers[s["id"]] == 0]
    working = [s for s in kept if any(t["succeeded"] > 0 for t in s["tools"] if t["name"] != "(server)")]
    print("### Servers that kept every promise\n")
    print(f"{len(kept)} of {len(audited)} audited servers have no confirmed cell; {len(working)} of them had at "
          f"least one tool answer a call (the others' tools never worked: nothing was shown).\n")

    print("### The most common broken promises\n")
    rows = [(clause, basis, n, example[(clause, basis)].replace("|", "\\|"))
            for (clause, basis), n in promises.most_common(12)]
    print(table(["clause", "promise (basis)", "cells", "example"], rows))
    print()

    static = results / "static.json"
    if static.is_file():
        comp = json.loads(static.read_text()).get("comparison", {})
        gaps = Counter(g["class"] for g in comp.get("declaration_gaps", []) if g["server"] not in fixtures)
        print("### Declaration gaps (static vs dynamic)\n")
        print("Confirmed cells no static rule predicted from the tool's own declaration, by clause: " +
              (", ".join(f"{c} {n}" for c, n in gaps.most_common()) or "none") + ".\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    cat = Path(__file__).resolve().parent / "catalogue.toml"
    if "--catalogue" in args:
        i = args.index("--catalogue")
        cat = Path(args[i + 1])
        del args[i:i + 2]
    main(Path(args[0]), cat)
