"""Draws 40 confirmed cells of a map (fixtures left out), reproducibly, for judging.

    python3 study/judged/draw.py MAP_JSON SEED > sample.tsv
"""
import json, random, sys
doc = json.load(open(sys.argv[1]))
rows = []
for s in doc['servers']:
    if s['id'].startswith('fixture.'):
        continue
    for t in s['tools']:
        for c in t['cells']:
            if c['verdict'] == 'confirmed':
                rec = next(r for r in c['records'] if r['verdict'] == 'confirmed')
                ev = rec.get('evidence', {})
                effs = ev.get('effects', [])
                first = effs[0] if effs else {}
                rows.append((s['id'], t['name'], c['clause'], c.get('touched', ''), first.get('class', ''), first.get('path', ''), c['reason'], rec['probe'], rec['seq']))
random.seed(sys.argv[2])
sample = random.sample(rows, min(40, len(rows)))
print(f"# {len(rows)} confirmed cells; 40 drawn with random.seed({sys.argv[2]!r})", file=sys.stderr)
print("n\tserver\ttool\tclause\ttouched\tfirst_effect_class\tfirst_effect_path\treason\tprobe\tseq")
for i, r in enumerate(sample, 1):
    print(str(i) + "\t" + "\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in r))
