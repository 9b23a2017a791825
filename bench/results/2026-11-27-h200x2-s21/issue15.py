# issue15.py LAYOUT PATTERN: issue 15's bars for build s. Per size, auto
# (DPML_TUNER=auto, the default) and the MPI library's own allreduce in
# the same run of the C client (dpmlbench-c, libdpml.so preloaded): batch
# medians in us, medians over the runs; auto/MPI per run, its median and
# largest; and the plan auto froze on in each run (tree r=R: the latency
# tree of radix R at every level of the node; l=L shm: L leaders over the
# shared-memory copies). Runs: 4 B-64 KiB from s3 (and s5 for 1x32 b2b),
# 256 KiB-64 MiB from s4-s6.
import json,glob,statistics as S,collections,sys
lay,pat=sys.argv[1:3]
gs=[f's[35]/c-s-{lay}-{pat}-[1234]',f's[456]/c-s-{lay}-{pat}-big*']
a=collections.defaultdict(lambda:collections.defaultdict(list))
for g in gs:
    for f in sorted(glob.glob(g+'/results.json')):
        res=json.load(open(f))['results']
        rows={(r['bytes'],r['spec']):r for r in res if 'us' in r}
        for (b,s),r in rows.items():
            if s!='auto': continue
            n=rows[(b,'native')]['us']['median']; u=r['us']['median']; p=r['plan']
            a[b]['auto'].append(u); a[b]['mpi'].append(n); a[b]['ratio'].append(u/n)
            a[b]['plan'].append(f"tree r={p['radix']}" if p.get('intra')=='tree' and p['leaders']==1 else
                               f"l={p['leaders']} tree r={p['radix']}" if p.get('intra')=='tree' else
                               f"{p['variant']} l={p['leaders']} k={p['pipeline']}" if p['variant']=='pipelined' else
                               f"l={p['leaders']} {p.get('intra')}")
print(f'| size | runs | MPI (us) | auto (us) | auto/MPI median | largest | auto froze on |')
print('|---:|---:|---:|---:|---:|---:|---|')
for b,v in sorted(a.items()):
    print(f"| {b} | {len(v['ratio'])} | {S.median(v['mpi']):.2f} | {S.median(v['auto']):.2f} | {S.median(v['ratio']):.2f} | {max(v['ratio']):.2f} | {', '.join(v['plan'])} |")
