# ck.py DIR: gocall clock logs (clock-BUILD-R.log) -> per build and probe,
# the median over launches and repetitions of the max over ranks, ns per call.
import glob,re,sys,statistics as S,collections
v=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/clock-*.log'):
    b=re.match(r'.*/clock-(\w+)-\d+\.log',f).group(1)
    for l in open(f):
        p=l.strip().split(',')
        if len(p)==5 and p[0]=='clock' and p[1]!='ranks': v[(b,p[3])].append(float(p[4]))
bs=sorted({b for b,_ in v}); ps=[]
for b,p in v:
    if p not in ps: ps.append(p)
print('| probe | '+' | '.join(bs)+' |'); print('|---|'+'---:|'*len(bs))
for p in ps: print(f'| {p} | '+' | '.join(f'{S.median(v[(b,p)]):.1f}' for b in bs)+' |')
