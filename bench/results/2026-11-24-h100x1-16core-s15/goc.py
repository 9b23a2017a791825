# goc.py DIR LAYOUT RUNS [GO [C]]: issue 17 at every size. Per size, medians over
# runs (RUNS: a glob part) of the Go benchmark (GO-LAYOUT-R, GO go by
# default: dpmlbench,
# dpml.Allreduce for auto, mpi.Allreduce for native) and the C client
# (C-LAYOUT-R, C c by default: dpmlbench-c with libdpml.so preloaded),
# batch medians in
# us, and the ratios Go/C for auto (dpml) and native (the MPI library).
import json,glob,statistics as S,collections,sys
d,lay,runs=sys.argv[1:4]
go=sys.argv[4] if len(sys.argv)>4 else 'go'
cc=sys.argv[5] if len(sys.argv)>5 else 'c'
def load(kind):
    rows=collections.defaultdict(list)
    for f in sorted(glob.glob(f'{d}/{kind}-{lay}-{runs}/results.json')):
        for r in json.load(open(f))['results']:
            if 'us' in r: rows[(r['bytes'],r.get('spec',r.get('variant')))].append(r['us']['median'])
    return rows
g,c=load(go),load(cc)
print(f'| size | C native | Go native | Go/C native | C auto | Go auto | Go/C auto |')
print('|---:|---:|---:|---:|---:|---:|---:|')
worst=0
for b in sorted({b for b,s in c}):
    cn,gn=S.median(c[(b,'native')]),S.median(g[(b,'native')])
    ca,ga=S.median(c[(b,'auto')]),S.median(g[(b,'auto')])
    worst=max(worst,ga/ca)
    print(f'| {b} | {cn:.2f} | {gn:.2f} | {gn/cn:.2f} | {ca:.2f} | {ga:.2f} | {ga/ca:.2f} |')
print(f'largest Go/C auto {worst:.2f}')
