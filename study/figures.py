#!/usr/bin/env python3
"""The study's headline figures from a campaign directory and its map, reading receipts only.

    study/figures.py CAMPAIGN_DIR MAP_JSON

CAMPAIGN_DIR is what `vac campaign run` wrote (its chain `receipts.jsonl` and one directory
per probe); MAP_JSON is `vac report CAMPAIGN_DIR --out MAP`'s `map.json`. Prints: targets by
outcome (the members' status and exit, and for those not audited why, classified from what
the server last wrote to stderr);
wall time per probe (from its log's first and last record, median, p90, worst); tools,
cells by verdict and confirmed cells by clause; servers that kept every promise. Runs
nothing; packed logs are read through the `zstd` program. Stdlib only.
"""
import json
import os
import sys

# study/select.py would shadow the standard `select` module that subprocess imports.
STUDY_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != STUDY_DIR] + [STUDY_DIR]
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

from receiptlog import log_of, records, why_not_started  # noqa: E402


def quantile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def stderr_of(probe_dir):
    log = log_of(probe_dir)
    if log is None:
        return ""
    return "".join(
        r["body"]["bytes"].get("stored", {}).get("utf8", "")
        for r in records(log)
        if r.get("kind") == "frame" and r["body"].get("direction") == "stderr"
        and isinstance(r["body"]["bytes"].get("stored"), dict)
    )


def why(member, campaign):
    text = stderr_of(campaign / member["dir"]).lower()
    if not text.strip():
        return "nothing on stderr: " + ("no answer to initialize" if "no answer" in member["detail"] else "exited")
    return why_not_started(text)


def main(campaign, map_json):
    campaign = Path(campaign)
    members = [r["body"] for r in records(campaign / "receipts.jsonl") if r.get("kind") == "member"]
    print(f"targets: {len(members)}")
    by_status = Counter((m["status"], m["exit"]) for m in members)
    for (status, code), n in sorted(by_status.items()):
        print(f"  {status:<10} exit {code}: {n}")
    not_audited = [m for m in members if m["status"] != "completed"]
    for reason, n in Counter(why(m, campaign) for m in not_audited).most_common():
        print(f"  not audited, {reason}: {n}")

    walls = []
    for m in members:
        log = log_of(campaign / m["dir"])
        if log is None:
            continue
        ts = [r["ts"] for r in records(log)]
        if ts:
            walls.append(((ts[-1] - ts[0]) / 1e9, m["target"]))
    seconds = [w for w, _ in walls]
    if seconds:
        worst = max(walls)
        print(f"wall per probe (s): n={len(seconds)} median {quantile(seconds, 0.5):.1f} "
              f"p90 {quantile(seconds, 0.9):.1f} worst {worst[0]:.1f} ({worst[1]}) "
              f"sum {sum(seconds):.0f}")

    doc = json.load(open(map_json))
    summary = doc["summary"]
    print("cells: " + ", ".join(f"{k} {summary[k]}" for k in sorted(summary)))
    clauses = Counter()
    servers_confirmed = Counter()
    for server in doc["servers"]:
        for tool in server["tools"]:
            for cell in tool["cells"]:
                if cell["verdict"] == "confirmed":
                    clauses[cell["clause"]] += 1
                    servers_confirmed[server["id"]] += 1
    print("confirmed cells by clause: " + ", ".join(f"{c} {n}" for c, n in clauses.most_common()))
    audited = [s for s in doc["servers"] if s["tools"]]
    kept = [s["id"] for s in audited if servers_confirmed[s["id"]] == 0]
    print(f"servers audited with tools: {len(audited)}; with a confirmed cell: "
          f"{len(servers_confirmed)}; none confirmed: {len(kept)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
