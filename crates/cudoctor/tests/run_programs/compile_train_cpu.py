# A compiled module trained on the CPU, with a graph break (print) inside a submodule: dynamo
# compiles it before the first optimizer step, so the observer keeps its global module hooks
# (dynamo's guards cover them: taking them away would recompile the module), and the frames that
# resume after the break guard on the observer's hooks. The "eager" backend: dynamo's work is the
# same, no C++ compile.
import torch
import torch.nn as nn
from torch.nn.modules import module as m


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        x = self.lin(x)
        print("a graph break", end="\r")
        return x.relu()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), Noisy(), nn.Linear(8, 1))
compiled = torch.compile(model, backend="eager", dynamic=False)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
for _ in range(3):
    compiled(x).sum().backward()
    opt.step()
    opt.zero_grad()
print("trained, %d global forward hooks" % (len(m._global_forward_pre_hooks) + len(m._global_forward_hooks)))
