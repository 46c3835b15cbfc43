# The aggregate confusion of held-out corpora for a cudoctor binary: how many reports of each
# expected category were answered as each other category, summed over the files given, never a
# case (no id, source or text is printed). A negative answered "unknown" is not a miss (as in
# blind.py and the corpus tests).
# python3 scripts/explain/confusion.py CUDOCTOR_BINARY crates/cudoctor-explain/tests/corpus/waveN.toml [...]
import tomllib, json, subprocess, sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
cases=[c for f in sys.argv[2:] for c in tomllib.load(open(f,'rb'))['case']]
def ans(c):
    r=subprocess.run([sys.argv[1],'explain','--no-machine','--format','json','-'],input=c['text'].encode(),capture_output=True,timeout=60)
    try: return json.loads(r.stdout)['category']
    except Exception: return 'ERR'
with ThreadPoolExecutor(2) as ex: got=list(ex.map(ans,cases))
conf=Counter((c['expected'],g) for c,g in zip(cases,got)
             if c['expected']!=g and not (c['expected']=='not_environment' and g=='unknown'))
answered=Counter(got)
right=Counter(g for c,g in zip(cases,got) if c['expected']==g)
print(f"{len(cases)} reports, {sum(conf.values())} misses")
for (e,g),n in sorted(conf.items(), key=lambda x:(-x[1],x[0])): print(f"{n:4d} {e} -> {g}")
print("precision of each answer (right / answered):")
for g in sorted(answered): print(f"  {g}: {right[g]}/{answered[g]}")
