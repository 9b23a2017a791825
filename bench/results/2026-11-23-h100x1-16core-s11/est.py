import csv,gzip,glob,os,statistics,random,sys,collections
D=sys.argv[1]
data=collections.defaultdict(dict)
for p in glob.glob(D+'/spans/*.csv.gz'):
    name=os.path.basename(p)[:-7]
    pat,size,arm,rep=name.split('-')
    rows=list(csv.DictReader(gzip.open(p,'rt')))
    cols={k:[float(r[k]) if r[k] else None for r in rows] for k in ('second','last','penult','skew','period')}
    data[(pat,size,rep)][arm]=cols
def stat(xs,how):
    xs=sorted(xs)
    if how=='min': return xs[0]
    if how=='med': return statistics.median(xs)
    if how=='trim': k=len(xs)-len(xs)//4; return sum(xs[:k])/k
    if how=='lowq': return xs[len(xs)//4]
random.seed(1)
metrics=sys.argv[2].split(',') if len(sys.argv)>2 else ['second']
for metric in metrics:
  print('metric',metric)
  for how in ('min','med','trim','lowq'):
    for R in (5,8,16,32,64):
        regrets=collections.defaultdict(list)
        for key,arms in data.items():
            truth={a:statistics.median([x for x in c['period'] if x]) for a,c in arms.items()}
            best=min(truth.values())
            for trial in range(200):
                est={}
                for a,c in arms.items():
                    xs=[x for x in c[metric] if x is not None]
                    i=random.randrange(100,len(xs)-R)
                    est[a]=stat(xs[i:i+R],how)
                pick=min(est,key=est.get)
                regrets[key[0]].append(truth[pick]/best-1)
        print(' %4s R=%2d '%(how,R)+' '.join('%s: mean regret %.3f, P(>5%%) %.2f'%(p,statistics.fmean(v),sum(x>0.05 for x in v)/len(v)) for p,v in sorted(regrets.items())))
