#!/usr/bin/env python3
"""Compares the verdict records of two probes of the same server (say, by the old and the
new vac binary) up to nonces and times, for a change meant to keep receipts as they were.

    .ci/compare-receipts.py OLD_DIR NEW_DIR

The verdict grids (tool, clause, verdict) must be equal, and every verdict's evidence must
have the same keys at every depth with values of the same JSON types. Values that still
differ once hashes, nonces, run ids, numbers in text and measured times are masked are
listed by cell: compare them with two probes by the same binary, which differ alike where a
server's timing does (a process gone before /proc was read, a delayed write's window).
Exit 1 on a grid or shape difference."""
import json, re, sys

HEX = re.compile(r'[0-9a-f]{8,}')
NONCE = re.compile(r'(vac-nonce|nonce)[-A-Za-z0-9_.]*')
TIMES = {'ts', 'prev', 't_ns', 'at_ms', 'closed_ms', 'writes_ms', 'pid', 'ppid'}


def norm(v, key=None):
    if key in TIMES:
        return '<t>'
    if isinstance(v, dict):
        return {k: norm(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x, key) for x in v]
    if isinstance(v, str):
        return re.sub(r'\d+', '<n>', NONCE.sub('<nonce>', HEX.sub('<hex>', v)))
    return v


def verdicts(d):
    out = []
    for line in open(d + '/receipts.jsonl'):
        r = json.loads(line)
        if r['kind'] == 'verdict':
            out.append(norm(r['body']))
    return out


def keyset(v, p=''):
    out = {}
    if isinstance(v, dict):
        for k, x in v.items():
            out.update(keyset(x, p + '/' + k))
    elif isinstance(v, list):
        for x in v:
            out.update(keyset(x, p + '/#'))
    out[p] = type(v).__name__
    return out


a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
grid = lambda vs: [(v['tool'], v['clause'], v['verdict']) for v in vs]
if grid(a) != grid(b):
    print("the verdict grids differ")
    sys.exit(1)
shapes = [(x['tool'], x['clause']) for x, y in zip(a, b) if keyset(x['evidence']) != keyset(y['evidence'])]
values = [(x['tool'], x['clause']) for x, y in zip(a, b) if x != y]
print(f"{len(a)} verdicts: grid equal; evidence shapes differ in {len(shapes)} {shapes}; "
      f"values differ in {len(values)} {values}")
sys.exit(1 if shapes else 0)
