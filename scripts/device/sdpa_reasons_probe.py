# What torch says, on this GPU, when the math path is switched off for inputs that only math
# takes (fp32, a float mask, grouped-query attention): the warnings the observer's reasons come
# from, whether the call raised, and which backend ran with math on. Prints JSON.
import json
import warnings

import torch
import torch.nn.functional as F

dev = "cuda" if torch.cuda.is_available() else "cpu"
out = {"torch": torch.__version__, "device": dev}
q = torch.randn(8, 8, 1024, 64, device=dev, requires_grad=True)
k = torch.randn(8, 2, 1024, 64, device=dev, requires_grad=True)
v = torch.randn(8, 2, 1024, 64, device=dev, requires_grad=True)
mask = torch.zeros(8, 1, 1024, 1024, device=dev)
cases = {
    "fp32_mask_gqa": dict(attn_mask=mask, enable_gqa=True),
    "fp32_mask": dict(attn_mask=mask),
    "fp32_gqa": dict(enable_gqa=True),
}
for name, kw in cases.items():
    kk, vv = (k, v) if kw.get("enable_gqa") else (k.repeat_interleave(4, 1), v.repeat_interleave(4, 1))
    rec = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.backends.cuda.enable_math_sdp(False)
        try:
            F.scaled_dot_product_attention(q, kk, vv, **kw)
            rec["raised"] = None
        except Exception as e:
            rec["raised"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        finally:
            torch.backends.cuda.enable_math_sdp(True)
    rec["warnings"] = [str(w.message)[:400] for w in caught]
    rec["warning_categories"] = sorted({w.category.__name__ for w in caught})
    out[name] = rec
print(json.dumps(out, indent=1))
