# The learned fallback's prototype (docs/explain-corpus.md, 'A learned reader for unknown answers'):
# python3 answers.py BIN /tmp/nb/main.json (and /tmp/nb/r40.json with 40b9db2's binary), then run4.py / run6.py
# (cross-validation by repository on the tuning material, the seventh corpus with the reader that had not seen it).
# answers of a cudoctor binary to every corpus case except wave8 (held out); usage: answers.py BIN OUT
import tomllib, json, subprocess, sys, os
from concurrent.futures import ThreadPoolExecutor
D=os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../crates/cudoctor-explain/tests/corpus/')
BIN=sys.argv[1]
def fnv(s):
    h=0xcbf29ce484222325
    for b in s.encode():
        h^=b; h=(h*0x100000001b3)&0xffffffffffffffff
    return h
def repo(src):
    r=src.replace('https://','').replace('http://','').split('/')
    if r[0]=='github.com' and len(r)>=3: return f"{r[1].lower()}/{r[2].lower()}"
    if len(r)>=2: return f"{r[0]}/{r[1]}"
    return r[0]
cases=[]
for c in tomllib.load(open(D+'corpus.toml','rb'))['case']: cases.append(('first',c))
p=tomllib.load(open(D+'public.toml','rb'))
for c in p['case']:
    cases.append(('public-dev' if fnv(f"{p['split_seed']}:{c['source']}")&1==0 else 'public-test',c))
for c in tomllib.load(open(D+'independent.toml','rb'))['case']: cases.append(('independent',c))
for name,seed in (('wave3',35),('wave4',36)):
    w=tomllib.load(open(D+name+'.toml','rb'))
    for c in w['case']:
        cases.append((name+('-tune' if fnv(f"{seed}:{repo(c['source'])}")&1==0 else '-test'),c))
for name in ('wave5','wave6','wave7'):
    for c in tomllib.load(open(D+name+'.toml','rb'))['case']: cases.append((name,c))
def ans(sc):
    s,c=sc
    r=subprocess.run([BIN,'explain','--no-machine','--format','json','-'],input=c['text'].encode(),capture_output=True,timeout=60)
    try: j=json.loads(r.stdout); cat=j['category']
    except Exception: cat='ERR'; j={}
    return dict(set=s,id=c['id'],repo=repo(c.get('source','')),expected=c['expected'],got=cat,text=c['text'],sig=j.get('signature'),conf=j.get('confidence'),matched=[m.get('signature') for m in j.get('matched',[])])
with ThreadPoolExecutor(2) as ex: out=list(ex.map(ans,cases))
json.dump(out,open(sys.argv[2],'w'))
from collections import Counter
print(len(out), Counter(o['set'] for o in out), 'ERR', sum(o['got']=='ERR' for o in out))
