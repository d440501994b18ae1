#!/usr/bin/env python3
"""Decodes the pair data of `peerpath report -o FILE.html` pages (the packed `CLS` of issue 42's
first form, or the `GHB`/`FAR`/`NEAR` form) into every cell of the requested rows, and compares:

  report-page-cells.py pages OLD.html NEW.html [GPU0 GPU1 ...]   two pages, cell by cell
  report-page-cells.py matrix PAGE.html MATRIX.json              a page against
      `peerpath matrix --format json --detail` (label and reason of every pair)

Used to show that a change of the page's encoding changed no cell (docs/performance.md)."""
import json, re, sys

def js(page, name):
    m = re.search(r'\nvar ' + name + r'=(.*?);\n', page, re.S)
    return None if m is None else json.loads(m.group(1))

def decode(path, rows=None):
    page = open(path).read()
    alpha = js(page, 'ALPHABET'); W = js(page, 'W'); EP = js(page, 'EP'); CELL = js(page, 'CELL')
    dec = {c: i for i, c in enumerate(alpha)}; base = len(alpha); N = len(EP)
    def code(s, k):
        v = 0
        for q in range(W): v = v * base + dec[s[k + q]]
        return v
    CLS = js(page, 'CLS')
    out = {}
    if rows is None:
        rows = range(N)
    else:
        rows = [i for i, e in enumerate(EP) if e[0] in rows]
    if CLS is not None:
        for a in rows:
            for b in range(N):
                out[(EP[a][0], EP[b][0])] = CELL[code(CLS, (a * N + b) * W)]
        return EP, out
    GHB = js(page, 'GHB'); FAR = js(page, 'FAR'); NEAR = js(page, 'NEAR'); G = len(GHB)
    for a in rows:
        s = NEAR[a]
        if s is None: continue
        k = 0; ga = EP[a][4]
        for b in range(N):
            gb = EP[b][4]
            if ga < 0 or gb < 0 or GHB[ga] == GHB[gb]:
                v = code(s, k); k += W
            else:
                x, y = (ga, gb) if a < b else (gb, ga)
                v = code(FAR, (x * G + y) * W)
            out[(EP[a][0], EP[b][0])] = CELL[v]
        assert k == len(s), (a, k, len(s))
    return EP, out

def from_matrix(path):
    d = json.load(open(path)); eps = d['endpoints']; out = {}
    for e in eps:
        for f in eps:
            if e['bdf'] == f['bdf']:
                out[(e['name'], f['name'])] = ('X' if e['name'] == f['name'] else 'PIX', '')
    for p, det in zip(d['pairs'], d['detail']):
        i, j, lab = p[0], p[1], p[2]
        assert det['label'] == lab and det['a'] == eps[i]['bdf']
        for x, y in ((i, j), (j, i)):
            out[(eps[x]['name'], eps[y]['name'])] = (lab, det['reason'])
    return out

if __name__ == '__main__':
    mode = sys.argv[1]
    if mode == 'pages':  # old new [rows...]
        rows = sys.argv[4:] or None
        e1, a = decode(sys.argv[2], rows); e2, b = decode(sys.argv[3], rows)
        assert [x[:4] for x in e1] == [x[:4] for x in e2], 'endpoints differ'
        keys = set(a) | set(b)
        bad = [k for k in keys if a.get(k) != b.get(k)]
        print(f'{len(keys)} cells compared, {len(bad)} differ', bad[:5])
    else:  # matrix page.html matrix.json
        eps, a = decode(sys.argv[2]); m = from_matrix(sys.argv[3])
        names = [e[0] for e in eps]
        bad = 0; n = 0
        for k, c in a.items():
            n += 1
            want = m.get(k)
            got = None if c is None else (c[0], c[3])
            if got != want:
                bad += 1
                if bad < 5: print('differ', k, got, want)
        print(f'{n} cells compared with the matrix, {bad} differ')
