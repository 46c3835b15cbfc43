import os; exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'run4.py')).read().split("print('n cv'")[0])
def pol(th,ne):
    def f(o,b):
        if o['got']!='unknown': return o['got']
        d=dict(b)
        if b[0][0]=='not_environment' or b[0][1]<th or d.get('not_environment',0)>=ne: return 'unknown'
        return b[0][0]
    return f
print('reader cv',score(preds,lambda o,b:o['got']),'w7',score(p7,lambda o,b:o['got']))
for th in (0.3,0.4,0.5,0.6):
    for ne in (1.1,0.3,0.2,0.1):
        print(th,ne,'cv',score(preds,pol(th,ne)),'w7',score(p7,pol(th,ne)))
