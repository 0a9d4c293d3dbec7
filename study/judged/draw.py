"""Draws confirmed cells of a map (fixtures left out), reproducibly, for judging.

    python3 study/judged/draw.py MAP_JSON SEED [N [EXCLUDE_TSV...]] > sample.tsv

N defaults to 40. Cells listed (by server, tool and clause) in an EXCLUDE_TSV — an earlier
draw of the same map — are left out before drawing, so that draws add up to one sample.
"""
import csv, json, random, sys
doc = json.load(open(sys.argv[1]))
n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
excluded = set()
for path in sys.argv[4:]:
    with open(path, newline='') as f:
        for row in csv.DictReader(f, delimiter='\t'):
            excluded.add((row['server'], row['tool'], row['clause']))
rows = []
for s in doc['servers']:
    if s['id'].startswith('fixture.'):
        continue
    for t in s['tools']:
        for c in t['cells']:
            if c['verdict'] == 'confirmed' and (s['id'], t['name'], c['clause']) not in excluded:
                rec = next(r for r in c['records'] if r['verdict'] == 'confirmed')
                ev = rec.get('evidence', {})
                effs = ev.get('effects', [])
                first = effs[0] if effs else {}
                rows.append((s['id'], t['name'], c['clause'], c.get('touched', ''), first.get('class', ''), first.get('path', ''), c['reason'], rec['probe'], rec['seq']))
random.seed(sys.argv[2])
sample = random.sample(rows, min(n, len(rows)))
print(f"# {len(rows)} confirmed cells ({len(excluded)} excluded); {len(sample)} drawn with random.seed({sys.argv[2]!r})", file=sys.stderr)
print("n\tserver\ttool\tclause\ttouched\tfirst_effect_class\tfirst_effect_path\treason\tprobe\tseq")
for i, r in enumerate(sample, 1):
    print(str(i) + "\t" + "\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in r))
