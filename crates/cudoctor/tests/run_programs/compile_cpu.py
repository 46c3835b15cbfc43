# torch.compile on the CPU: a function with a graph break (print) compiled by inductor, and an
# attention function that must be traced without a break even though cudoctor's observer wraps
# scaled_dot_product_attention, recompiled for a new shape (dynamic=False). The second goes to
# the "eager" backend: dynamo's work is the same, and no C++ compile is spent on it.
import torch
import torch.nn.functional as F


def broken(x):
    x = x * 2
    print("a graph break")
    return x.sin()


def attention(q):
    return F.scaled_dot_product_attention(q, q, q).cos()


broken_c = torch.compile(broken)
broken_c(torch.randn(8))
attention_c = torch.compile(attention, dynamic=False, backend="eager")
attention_c(torch.randn(1, 2, 8, 4))
attention_c(torch.randn(1, 2, 16, 4))
print("compiled")
