# The naive-Bayes fallback measured and dropped in docs/explain-corpus.md (2026-12-04, late):
# leave-one-repository-out over the tuning halves written by tuning_answers.py.
import json, re, math
from collections import Counter, defaultdict
data=json.load(open('/tmp/nb/tune.json'))
def toks(t):
    t=t.lower()
    w=re.findall(r'[a-z_][a-z0-9_\.\+\-]*[a-z0-9]|[a-z]',t)
    w=[x for x in w if len(x)>2]
    cjk=re.findall(r'[\u4e00-\u9fff]+',t)
    bi=[s[i:i+2] for s in cjk for i in range(len(s)-1)]
    return set(w)|set(bi)
for d in data: d['toks']=toks(d['text'])
def train(rows):
    cc=Counter(); tc=defaultdict(Counter); df=Counter()
    for r in rows:
        cc[r['expected']]+=1
        for t in r['toks']: tc[r['expected']][t]+=1; df[t]+=1
    return cc,tc,df
def predict(model,toks,min_df=2):
    cc,tc,df=model
    N=sum(cc.values()); scores={}
    for c,n in cc.items():
        s=math.log(n/N)
        for t in toks:
            if df[t]<min_df: continue
            s+=math.log((tc[c][t]+0.1)/(n+0.2)) - math.log((df[t]-tc[c][t]+0.1)/(N-n+0.2))
        scores[c]=s
    best=sorted(scores.items(),key=lambda x:-x[1])
    return best
for margin in (0,2,5,10):
  right=wrong=fa=abst=0
  for d in data:
    if d['got']!='unknown': continue
    model=train([r for r in data if r['repo']!=d['repo'] and r['expected']!='unknown'])
    best=predict(model,d['toks'])
    guess=best[0][0]; m=best[0][1]-best[1][1]
    if m<margin: abst+=1; continue
    if guess==d['expected']: right+=1
    else:
        wrong+=1
        if d['expected']=='not_environment': fa+=1
  print('margin',margin,'right',right,'wrong',wrong,'(neg->env',fa,') abstain',abst)
from collections import Counter
print(Counter(d['expected'] for d in data if d['got']=='unknown'))
print('--- net effect on correctness')
for margin in (0,2,3,5,8,10,15):
  gain=loss=0; gains=Counter()
  for d in data:
    if d['got']!='unknown': continue
    model=train([r for r in data if r['repo']!=d['repo'] and r['expected']!='unknown'])
    best=predict(model,d['toks'])
    guess=best[0][0]; m=best[0][1]-best[1][1]
    if m<margin or guess=='not_environment': continue
    if d['expected']=='not_environment' or d['expected']=='unknown': loss+=1
    elif guess==d['expected']: gain+=1; gains[guess]+=1
  print('margin',margin,'gain',gain,'false alarms',loss, dict(gains))
print('--- NB alone, leave-one-repo-out, and agreement with rules')
ok=0; n=0; both=0; rules_ok=0; nb_fix=0
for d in data:
    if d['expected']=='unknown': continue
    model=train([r for r in data if r['repo']!=d['repo'] and r['expected']!='unknown'])
    g=predict(model,d['toks'])[0][0]
    n+=1; ok+= g==d['expected']
    r_ok = d['got']==d['expected'] or (d['expected']=='not_environment' and d['got']=='unknown')
    rules_ok+=r_ok
    if not r_ok and d['got']!='unknown' and g==d['expected']: nb_fix+=1
print('NB', ok, '/', n, 'rules', rules_ok, 'rule-wrong where NB right', nb_fix)
