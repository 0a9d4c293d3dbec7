#!/usr/bin/env python3
"""Run from the repository root: `python3 study/service_estimate.py MAP.json`. Estimate which confirmed net.egress cells of a campaign map would refute under the service
tables of contracts/src/service.rs (VENDOR_DOMAINS, LOCAL_SERVICES): every effect's host under
a vendor domain of a server name word, or a loopback endpoint at a local service's port, and
no canary or credential sent. An estimate: replay grades with the recorded contract."""
import json, re, sys, tomllib
from collections import Counter
src = open('contracts/src/service.rs').read()
pair = r'\("([a-z0-9]+)", &\[([^\]]*)\]\)'
vend = {w: [d.strip('" ') for d in ds.split(',') if d.strip()] for w, ds in re.findall(pair, src[src.index('VENDOR_DOMAINS: &'):src.index('LOCAL_SERVICES: &')])}
local = {w: [int(p) for p in ps.split(',') if p.strip()] for w, ps in re.findall(pair, src[src.index('LOCAL_SERVICES: &'):])}
cat = {s['id']: s for s in tomllib.load(open('study/catalogue.toml', 'rb'))['server']}
def words(t):
    out, cur, prev = [], '', False
    for ch in t:
        if not ch.isalnum():
            prev = False
            if cur: out.append(cur); cur = ''
            continue
        if ch.isupper() and prev and cur: out.append(cur); cur = ''
        prev = ch.islower() or ch.isdigit(); cur += ch.lower()
    if cur: out.append(cur)
    return out
m = json.load(open(sys.argv[1]))
total, moved = 0, []
for s in m['servers']:
    c = cat.get(s['id'], {})
    ws = set(words(s.get('name') or ''))
    for part in c.get('command', []):
        ws |= set(words(part.split('/')[-1]))
        if 'node_modules/' in part:
            ws |= set(words('/'.join(part.split('node_modules/')[1].split('/')[:2])))
    doms = [d for w in ws if w in vend for d in vend[w]]
    ports = [p for w in ws if w in local for p in local[w]]
    for t in s['tools']:
        for cell in t['cells']:
            if cell['clause'] != 'net.egress' or cell['verdict'] != 'confirmed': continue
            total += 1
            r = next(r for r in cell['records'] if r['verdict'] == 'confirmed')
            def ok(e):
                d = e.get('detail') or {}
                if d.get('canaries') or d.get('credentials'): return False
                p = e.get('path') or ''
                host, port = (p.rpartition(':')[0], p.rpartition(':')[2]) if e['class'] == 'connect' else (p, '')
                if any(host == x or host.endswith('.' + x) for x in doms): return True
                return host in ('127.0.0.1', 'localhost') and port.isdigit() and int(port) in ports
            effs = r['evidence']['effects']
            if effs and all(ok(e) for e in effs): moved.append(s['id'])
print('confirmed net.egress cells', total, '; would refute', len(moved))
for k, v in Counter(moved).most_common(): print(' ', v, k)
