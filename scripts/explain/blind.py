# The aggregate figures of a held-out corpus for a cudoctor binary, never a case:
# python3 scripts/explain/blind.py CUDOCTOR_BINARY crates/cudoctor-explain/tests/corpus/waveN.toml
import tomllib, json, subprocess, sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
cases=tomllib.load(open(sys.argv[2],'rb'))['case']
def ans(c):
    r=subprocess.run([sys.argv[1],'explain','--no-machine','--format','json','-'],input=c['text'].encode(),capture_output=True,timeout=60)
    try: return json.loads(r.stdout)['category']
    except Exception: return 'ERR'
with ThreadPoolExecutor(2) as ex: got=list(ex.map(ans,cases))
per=Counter(); tot=Counter(); unk=fa=pos=neg=0
for c,g in zip(cases,got):
    e=c['expected']; tot[e]+=1
    ok = g in ('not_environment','unknown') if e=='not_environment' else g==e
    per[e]+=ok
    if e=='not_environment': neg+=1; fa+= not ok
    else: pos+=1; unk+= g=='unknown'
print(sys.argv[1], 'overall', sum(per.values()), '/', len(cases), f"{100*sum(per.values())/len(cases):.1f}%", 'unknown', unk, '/', pos, 'false alarms', fa, '/', neg, 'ERR', got.count('ERR'))
print('  '+', '.join(f"{k} {per[k]}/{tot[k]}" for k in sorted(tot)))
