import os; exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'exp.py')).read())
import time
main=json.load(open('/tmp/nb/main.json')); r40=json.load(open('/tmp/nb/r40.json'))
for o in main+r40: o['toks']=toks(o['text'])
train=[o for o in main if o['set'] in TRAIN_SETS and o['expected']!='unknown']
# 5 folds by repository
folds=[[] for _ in range(5)]
for o in train: folds[fnv_ := (hash(o['repo'])%5)].append(o) if False else None
import zlib
for o in train: folds[zlib.crc32(o['repo'].encode())%5].append(o)
preds=[]
t=time.time()
for k in range(5):
    M=LR([o for j,f in enumerate(folds) if j!=k for o in f])
    for o in folds[k]: preds.append((o,M.predict(o['toks'])))
print('cv time',time.time()-t)
w7=[o for o in r40 if o['set']=='wave7']
M7=LR([o for o in train if o['set']!='wave7'])
p7=[(o,M7.predict(o['toks'])) for o in w7]
def score(pairs,policy):
    right=unk=fa=0
    for o,best in pairs:
        a=policy(o,best)
        right+=ok(o['expected'],a)
        if o['expected']!='not_environment': unk+=a=='unknown'
        else: fa+=not ok(o['expected'],a)
    return right,unk,fa
def unk(th):
    def f(o,b):
        if o['got']=='unknown' and b[0][1]>=th: return b[0][0]
        return o['got']
    return f
def over(th,c,q):
    def f(o,b):
        g=o['got']
        if g=='unknown': return b[0][0] if b[0][1]>=th else g
        if (o.get('conf') or 0)<=c and b[0][0]!=g and b[0][1]>=q: return b[0][0]
        return g
    return f
print('n cv',len(preds),'n w7',len(p7))
for name,pol in [('reader',lambda o,b:o['got']),('model',lambda o,b:b[0][0])]+[(f'unk{t}',unk(t)) for t in (0,0.2,0.3,0.4,0.5,0.6)]+[(f'over c{c} q{q}',over(0.3,c,q)) for c in (0.45,0.6) for q in (0.5,0.7,0.9)]:
    print(f"{name:18} cv {score(preds,pol)}  w7 {score(p7,pol)}")
