# gc.py DIR...: gocall's rows (bench/diag/gocall, CSV in DIR/gocall-*.log):
# per label (the -label without its run number), variant and size, the
# median over runs and repetitions of us per call (max over ranks), and
# the context switches per call per rank (mean over ranks). The Go
# probe's repetition 0 is left out (the first-size transient: mpi's
# package doc).
import csv,glob,statistics as S,collections,sys
d=collections.defaultdict(list)
for dd in sys.argv[1:]:
    for f in sorted(glob.glob(f'{dd}/gocall-*.log')):
        for row in csv.reader(open(f)):
            if len(row)<12 or row[0] not in('go','c') or row[2]=='ranks': continue
            if row[3]=='0' and row[0]=='go': continue
            lab=row[1].rsplit('-',1)[0]
            d[(lab,row[4],int(row[6]))].append((float(row[8]),float(row[11])))
sizes=sorted({b for _,_,b in d})
print('| label | variant | '+' | '.join(f'{b} B' for b in sizes)+' |')
print('|---|---|'+'---:|'*len(sizes))
for k in sorted({(l,v) for l,v,_ in d}):
    cells=[]
    for b in sizes:
        x=d.get(k+(b,))
        cells.append(f"{S.median(v[0] for v in x):.2f} ({S.median(v[1] for v in x):.4f})" if x else '-')
    print(f'| {k[0]} | {k[1]} | '+' | '.join(cells)+' |')
