import json, re, math, sys
from collections import Counter, defaultdict
TRAIN_SETS={'first','public-dev','wave3-tune','wave4-tune','wave5','wave6','wave7'}
def toks(t):
    t=t.lower()
    w=re.findall(r'[a-z_][a-z0-9_]*',t)
    w=[x for x in w if len(x)>2]
    cjk=re.findall(r'[\u4e00-\u9fff]+',t)
    bi=[s[i:i+2] for s in cjk for i in range(len(s)-1)]
    wb=[w[i]+' '+w[i+1] for i in range(len(w)-1)]
    return set(w)|set(bi)|set(wb)
def ok(exp,got): return got in ('not_environment','unknown') if exp=='not_environment' else got==exp
class NB:
    def __init__(s,rows,min_df=2,alpha=0.1):
        s.cc=Counter(); s.tc=defaultdict(Counter); s.df=Counter(); s.min_df=min_df; s.a=alpha
        for r in rows:
            s.cc[r['expected']]+=1
            for t in r['toks']: s.tc[r['expected']][t]+=1; s.df[t]+=1
        s.N=sum(s.cc.values())
    def predict(s,tk):
        sc={}
        for c,n in s.cc.items():
            v=math.log(n/s.N)
            for t in tk:
                if s.df[t]<s.min_df: continue
                v+=math.log((s.tc[c][t]+s.a)/(n+2*s.a)) - math.log((s.df[t]-s.tc[c][t]+s.a)/(s.N-n+2*s.a))
            sc[c]=v
        return sorted(sc.items(),key=lambda x:-x[1])
class LR:
    # multinomial logistic regression, SGD, L2
    def __init__(s,rows,epochs=30,lr=0.5,l2=1e-4,min_df=2):
        df=Counter(t for r in rows for t in r['toks'])
        s.vocab={t for t,n in df.items() if n>=min_df}
        s.classes=sorted({r['expected'] for r in rows})
        s.W={c:defaultdict(float) for c in s.classes}; s.b={c:0.0 for c in s.classes}
        import random; rnd=random.Random(7)
        rs=list(rows)
        for ep in range(epochs):
            rnd.shuffle(rs); eta=lr/(1+ep*0.2)
            for r in rs:
                f=[t for t in r['toks'] if t in s.vocab]; nf=1/math.sqrt(max(len(f),1))
                z={c:s.b[c]+sum(s.W[c][t] for t in f)*nf for c in s.classes}
                m=max(z.values()); e={c:math.exp(v-m) for c,v in z.items()}; Z=sum(e.values())
                for c in s.classes:
                    g=e[c]/Z-(1.0 if c==r['expected'] else 0.0)
                    if abs(g)<1e-4: continue
                    s.b[c]-=eta*g
                    W=s.W[c]
                    for t in f: W[t]-=eta*(g*nf+l2*W[t])
    def predict(s,tk):
        f=[t for t in tk if t in s.vocab]; nf=1/math.sqrt(max(len(f),1))
        z={c:s.b[c]+sum(s.W[c][t] for t in f)*nf for c in s.classes}
        m=max(z.values()); e={c:math.exp(v-m) for c,v in z.items()}; Z=sum(e.values())
        return sorted(((c,e[c]/Z) for c in s.classes),key=lambda x:-x[1])
def combine(o,best,policy,thr):
    g=o['got']; top,p=best[0]; second=best[1][1]
    if policy=='reader': return g
    if policy=='unk':
        if g=='unknown' and p-second>=thr: return top
        return g
    if policy=='model': return top
    if policy=='unk_or_lowconf':
        if g=='unknown' and p-second>=thr: return top
        if g!='unknown' and top!=g and p>=0.9 and (o.get('conf') or 1)<0.8: return top
        return g
def evaluate(name,rows,model,policies):
    for pol,thr in policies:
        right=unk=fa=0; npos=sum(r['expected']!='not_environment' for r in rows); nneg=len(rows)-npos
        for o in rows:
            best=model.predict(o['toks']); a=combine(o,best,pol,thr)
            right+=ok(o['expected'],a); 
            if o['expected']!='not_environment': unk+=a=='unknown'
            else: fa+= not ok(o['expected'],a)
        print(f"  {name:22} {pol:15} thr={thr:<5} right {right}/{len(rows)} ({100*right/len(rows):.1f}%) unknown {unk}/{npos} fa {fa}/{nneg}")
