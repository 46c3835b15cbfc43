# A small attention model trained on the CPU: three steps whose attention torch runs with its
# fused CPU kernel, three with dropout (which the fused CPU kernel refuses: math).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x, dropout):
        q = self.proj(x)
        return F.scaled_dot_product_attention(q, q, q, dropout_p=dropout).sum()


torch.manual_seed(0)
model = Attention()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(6):
    loss = model(torch.randn(2, 4, 32, 16), 0.0 if i < 3 else 0.1)
    loss.backward()
    opt.step()
    opt.zero_grad()
# Inference after training: the optimizer keeps marking the steps.
with torch.no_grad():
    model(torch.randn(2, 4, 32, 16), 0.0)
# Under cudoctor's observer: its global module hooks are gone once the optimizer marks the steps.
from torch.nn.modules import module as m

print("trained, %d global forward hooks" % (len(m._global_forward_pre_hooks) + len(m._global_forward_hooks)))
