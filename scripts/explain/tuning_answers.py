# The answers of a cudoctor binary to the tuning halves only (the first corpus, public.toml dev
# half, wave3 and wave4 tuning halves), for experiments such as unknown_fallback_experiment.py.
# Usage: python3 scripts/explain/tuning_answers.py CUDOCTOR_BINARY (writes /tmp/nb/tune.json)
import tomllib, json, subprocess, sys, os, re
os.makedirs('/tmp/nb', exist_ok=True)
D=os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../crates/cudoctor-explain/tests/corpus/')
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
for c in tomllib.load(open(D+'corpus.toml','rb'))['case']:
    cases.append(('first',c))
p=tomllib.load(open(D+'public.toml','rb'))
for c in p['case']:
    if fnv(f"{p['split_seed']}:{c['source']}")&1==0: cases.append(('public-dev',c))
for name,seed in (('wave3',35),('wave4',36)):
    w=tomllib.load(open(D+name+'.toml','rb'))
    for c in w['case']:
        if fnv(f"{seed}:{repo(c['source'])}")&1==0: cases.append((name+'-tune',c))
out=[]
for s,c in cases:
    r=subprocess.run([BIN,'explain','--no-machine','--format','json','-'],input=c['text'].encode(),capture_output=True,timeout=30)
    try: cat=json.loads(r.stdout)['category']
    except Exception: cat='ERR'
    out.append(dict(set=s,id=c['id'],repo=repo(c.get('source','')),expected=c['expected'],got=cat,text=c['text']))
json.dump(out,open('/tmp/nb/tune.json','w'))
from collections import Counter
print(len(out), Counter(o['set'] for o in out))
print('right', sum(o['expected']==o['got'] for o in out), 'unknown', sum(o['got']=='unknown' for o in out))
