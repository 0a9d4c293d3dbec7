#!/usr/bin/env python3
"""Per server, how many tools got a call that did its job: by `isError` and JSON-RPC errors
alone (the rule before vac judged answers), and by the judgement vac records with each call
(`answer`, contracts/src/answer.rs: an error told in a result's text is not a success).

    study/answers.py RECEIPTS_DIR...

Each RECEIPTS_DIR is a probe's receipt directory or a campaign's (every `receipts.jsonl`
below it is read, or its packed `receipts.jsonl.zst` through the `zstd` program; a
campaign's repetitions of one target count as one server). Prints one
line per server and the totals. Reads receipts only; runs nothing.
"""
import json
import os
import sys

# study/select.py (the catalogue's rule) would shadow the standard `select` module that
# subprocess imports: look up modules without this script's directory.
STUDY_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != STUDY_DIR] + [STUDY_DIR]
import subprocess  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

from receiptlog import records  # noqa: E402

GOOD = {"answered", "empty"}


def calls(log):
    for record in records(log):
        if record.get("kind") != "event":
            continue
        event = record["body"].get("event", {})
        if event.get("type") == "call":
            yield event


def flagged_ok(event):
    outcome = event.get("outcome", {})
    ok = outcome.get("Ok")
    if ok is None or ok.get("error") is not None:
        return False
    result = ok.get("result") or {}
    return result.get("isError") is not True


def server_of(log, root):
    rel = log.parent.relative_to(root)
    parts = [p for p in rel.parts if not p.startswith("rep-")]
    return "/".join(parts) or root.name


def main(dirs):
    legacy = defaultdict(dict)
    judged = defaultdict(dict)
    unjudged = 0
    for d in dirs:
        root = Path(d)
        logs = list(root.rglob("receipts.jsonl")) + list(root.rglob("receipts.jsonl.zst"))
        for log in sorted(logs):
            server = server_of(log, root)
            for event in calls(log):
                tool = event["tool"]
                legacy[server][tool] = legacy[server].get(tool, False) or flagged_ok(event)
                answer = event.get("answer")
                if answer is None:
                    unjudged += 1
                judged[server][tool] = judged[server].get(tool, False) or answer in GOOD
    totals = [0, 0, 0]
    print(f"{'server':<40} {'tools':>5} {'not isError':>11} {'answered':>8}")
    for server in sorted(legacy):
        tools = len(legacy[server])
        by_flag = sum(legacy[server].values())
        by_answer = sum(judged[server].values())
        totals = [totals[0] + tools, totals[1] + by_flag, totals[2] + by_answer]
        print(f"{server:<40} {tools:>5} {by_flag:>11} {by_answer:>8}")
    tools, by_flag, by_answer = totals
    pct = lambda n: f"{100 * n / tools:.0f} %" if tools else "-"
    print(f"{'all':<40} {tools:>5} {by_flag:>5} ({pct(by_flag)}) {by_answer:>4} ({pct(by_answer)})")
    if unjudged:
        print(f"{unjudged} calls carry no recorded judgement (receipts older than it): "
              "counted as not answered", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
