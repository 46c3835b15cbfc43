# A small GPT-style model for the GPU verification of `cudoctor run` (scripts/device/run_observer.sh):
# random weights, random tokens, no downloads. Options choose what the observer must see:
#   --dtype bf16            autocast to bf16, causal attention with is_causal=True: a fused backend
#   --dtype fp32 --mask     fp32 with an explicit float mask and grouped-query attention: math
#   --compile --graph-break torch.compile with a data-dependent .item() in the forward: a graph break
# It times its own steps (CUDA-synchronised) and writes their median to --timing FILE, so the
# overhead of the observer can be measured from inside.
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, mask, graph_break):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.use_mask, self.graph_break = mask, graph_break

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(h).view(b, t, 2, self.kv_heads, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        gqa = self.kv_heads != self.heads
        if self.use_mask:
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        if self.graph_break:
            # A data-dependent Python scalar: dynamo cannot keep it in the graph.
            if a.float().abs().mean().item() > 1e9:
                a = a * 0.5
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, dim, heads, kv_heads, layers, seq, mask, graph_break):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, kv_heads, mask, graph_break) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, mask):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--mask", action="store_true")
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--graph-break", action="store_true")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ddp", action="store_true")
    ap.add_argument("--timing", default=None)
    a = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if a.ddp:
        import torch.distributed as dist

        torch.cuda.set_device(local)
        dist.init_process_group("nccl")
    dev = torch.device("cuda", local)
    torch.manual_seed(0)
    vocab = 8192
    model = GPT(vocab, a.dim, a.heads, a.kv_heads, a.layers, a.seq, a.mask, a.graph_break).to(dev)
    if a.ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fwd = torch.compile(model) if a.compile else model
    mask = None
    if a.mask:
        # An additive causal mask with padding of the last 64 tokens of every other sequence.
        causal = torch.full((a.seq, a.seq), float("-inf"), device=dev).triu(1)
        mask = causal.expand(a.batch, 1, a.seq, a.seq).clone()
        mask[::2, :, :, -64:] = float("-inf")
        mask[..., 0] = 0.0
    times = []
    for step in range(a.steps):
        idx = torch.randint(0, vocab, (a.batch, a.seq), device=dev)
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            logits = fwd(idx, mask)
            loss = F.cross_entropy(logits.float().view(-1, vocab), idx.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000.0)
    warm = times[max(1, len(times) // 5):]
    med = sorted(warm)[len(warm) // 2]
    if rank == 0:
        print("steps %d, median step %.2f ms, loss %.3f (ln vocab %.3f)" % (a.steps, med, loss.item(), math.log(vocab)))
    if a.timing and rank == 0:
        with open(a.timing, "w") as f:
            json.dump({"median_ms": med, "times_ms": times}, f)
    if a.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
