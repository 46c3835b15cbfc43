# What the `cudoctor run` observer costs per call, on the CPU: the same workloads in fresh
# processes without and with the observer (crates/cudoctor-collect/src/run/observer.py installed
# as sitecustomize.py, exactly as `cudoctor run` does), interleaved, several pairs, medians.
# The tensors are tiny so the observer's Python work is what is measured, not the math:
#   sdpa call      one scaled_dot_product_attention call (a steady-state group: counted, not traced)
# Each figure is the fastest of 5 chunks in its process (the steady state, least disturbed by other
# processes), then the median over the pairs.
#   module call    one nn.Module call (the observer's global forward hooks, while they are in)
#   training step  forward + backward + optimizer step of a 4-layer attention model (4 SDPA calls,
#                  ~40 module calls): the hooks an optimizer step removes are gone after step 1
#   optimizer step, no grads   the same optimizer's step with no gradients: its step hook alone
#   sdpa call, grad            an attention call as training makes it (inputs that require grad)
# Usage: python scripts/bench/observer_overhead.py [--pairs N] [--observer FILE]   (python: one with torch)
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OBSERVER = os.path.join(HERE, "..", "..", "crates", "cudoctor-collect", "src", "run", "observer.py")


def workload():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    torch.set_num_threads(1)
    out = {}

    class Block(nn.Module):
        def __init__(self, dim=16, heads=2):
            super().__init__()
            self.heads = heads
            self.ln = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.o = nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(x)

    model = nn.Sequential(*[Block() for _ in range(4)], nn.LayerNorm(16), nn.Linear(16, 16))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 8, 16)

    def best(fn, chunks, per_chunk, per_call):
        # The fastest of several chunks: the steady state, with the least of other processes' noise.
        times = []
        for _ in range(chunks):
            t = time.perf_counter()
            for _ in range(per_chunk):
                fn()
            times.append((time.perf_counter() - t) / (per_chunk * per_call) * 1e6)
        return min(times)

    def train():
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    # Training first: an optimizer step is how the observer marks steps in a training program.
    for _ in range(20):
        train()
    out["training step"] = best(train, 5, 40, 1)
    # The step hook alone: the same optimizer stepping with no gradients (SGD skips every
    # parameter), so what is left is torch's step machinery and the observer's hook.
    opt.zero_grad(set_to_none=True)
    out["optimizer step, no grads"] = best(opt.step, 5, 400, 1)
    # An attention call as training makes it: inputs that require grad, grad mode on.
    qg = torch.randn(1, 2, 16, 8, requires_grad=True)
    for _ in range(100):
        F.scaled_dot_product_attention(qg, qg, qg, is_causal=True)
    out["sdpa call, grad"] = best(lambda: F.scaled_dot_product_attention(qg, qg, qg, is_causal=True), 5, 2000, 1)

    q = torch.randn(1, 2, 16, 8)
    layers = nn.Sequential(*[nn.Identity() for _ in range(32)])
    with torch.no_grad():
        for _ in range(100):
            F.scaled_dot_product_attention(q, q, q)
        out["sdpa call"] = best(lambda: F.scaled_dot_product_attention(q, q, q), 5, 2000, 1)
        for _ in range(50):
            layers(q)
        out["module call"] = best(lambda: layers(q), 5, 200, 33)
    return out


def child(observed, site):
    env = dict(os.environ)
    env.pop("CUDOCTOR_RUN_DIR", None)
    if observed:
        env["PYTHONPATH"] = site + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["CUDOCTOR_RUN_DIR"] = os.path.join(site, "out")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit("the workload failed (%s):\n%s" % ("observed" if observed else "plain", r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--observer", default=OBSERVER, help="the observer file to measure (default: this checkout's)")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(workload()))
        return
    import torch

    site = tempfile.mkdtemp(prefix="cudoctor-observer-bench-")
    try:
        shutil.copy(a.observer, os.path.join(site, "sitecustomize.py"))
        os.mkdir(os.path.join(site, "out"))
        plain, observed = [], []
        for _ in range(a.pairs):
            plain.append(child(False, site))
            observed.append(child(True, site))
        reports = [f for f in os.listdir(os.path.join(site, "out")) if f.endswith(".json")]
        if len(reports) != a.pairs:
            sys.exit("the observer wrote %d reports for %d observed runs" % (len(reports), a.pairs))
        rep = json.load(open(os.path.join(site, "out", reports[0])))
        if rep.get("errors"):
            sys.exit("the observer recorded errors: %s" % rep["errors"])
    finally:
        shutil.rmtree(site, ignore_errors=True)
    print("torch %s, Python %s, %d pairs of fresh processes, µs (best of 5 chunks, median over pairs)" % (torch.__version__, sys.version.split()[0], a.pairs))
    print()
    print("| workload | without | with the observer | observer cost |")
    print("|---|---|---|---|")
    for k in plain[0]:
        p = statistics.median(r[k] for r in plain)
        o = statistics.median(r[k] for r in observed)
        print("| %s | %.2f | %.2f | %+.2f (%+.1f%%) |" % (k, p, o, o - p, (o - p) / p * 100.0))
    print()
    print("observed: %d SDPA calls in %d groups, %d steps (%s)" % (rep["sdpa"]["calls"], len(rep["sdpa"]["groups"]), rep["steps"]["count"], rep["steps"]["source"]))


if __name__ == "__main__":
    main()
