import torch, warnings, random, numpy as np
from util import breaks
def f_warn(x):
    y = x + 1
    warnings.warn("hello")
    return y * 2
def f_setmask_scalar(x):
    m = x > 0
    y = torch.zeros_like(x)
    y[m] = 0
    return y + 1
def f_setmask_tensor(x):
    m = x > 0
    y = torch.zeros_like(x)
    y[m] = torch.tensor(3.0)
    return y + 1
def f_getmask(x):
    m = x > 0
    return x[m] + 1
def f_anyif(x):
    if torch.any(x > 0):
        return x + 1
    return x - 1
def f_rr(x):
    if random.random() < 0.5:
        return x+1
    return x-1
def f_np(x):
    d = np.random.uniform(0, 1, size=(3,))
    return x + torch.tensor(d)
def f_gen(x):
    g = torch.Generator(device="cpu"); g.manual_seed(0)
    return x + torch.rand(3, generator=g)
def f_threads(x):
    n = torch.get_num_threads()
    return x + n
def f_print(x):
    print("hi")
    return x + 1
if __name__=="__main__":
 for f in [f_warn,f_setmask_scalar,f_setmask_tensor,f_getmask,f_anyif,f_rr,f_np,f_gen,f_threads,f_print]:
    print("==", f.__name__)
    breaks(f, torch.randn(3))
