import torch, torch.nn as nn, logging
from util import breaks
import dadaptation
from dadaptation.experimental import dadapt_adam_preprint, dadapt_adan_ip
torch.manual_seed(0)
logging.basicConfig(level=logging.INFO)

def run(name, make_opt, sparse=False, steps=2):
    print("==", name, "sparse" if sparse else "dense")
    if sparse:
        model = nn.Sequential(nn.EmbeddingBag(20, 4, mode="sum", sparse=True), nn.Linear(4, 1))
        inp = (torch.randint(0, 20, (8, 3)),)
    else:
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
        inp = (torch.randn(16, 6),)
    opt = make_opt(model.parameters())
    def closure_free_step():
        opt.step()
    calls = []
    torch._dynamo.reset()
    from util import _hook, _records, report
    _hook(); del _records[:]
    cstep = torch.compile(opt.step, backend="eager")
    for i in range(steps):
        opt.zero_grad()
        model(*inp).pow(2).mean().backward()
        try:
            cstep()
        except Exception as e:
            print("  EXCEPTION", type(e).__name__, str(e).split("\n")[0][:300])
    report()

run("DAdaptAdaGrad", lambda p: dadaptation.DAdaptAdaGrad(p, lr=1.0, log_every=1))
run("DAdaptAdaGrad", lambda p: dadaptation.DAdaptAdaGrad(p, lr=1.0, log_every=1), sparse=True)
run("DAdaptAdam", lambda p: dadaptation.DAdaptAdam(p, lr=1.0, log_every=1))
run("DAdaptAdam default", lambda p: dadaptation.DAdaptAdam(p, lr=1.0))
run("DAdaptAdan", lambda p: dadaptation.DAdaptAdan(p, lr=1.0, log_every=1))
run("DAdaptAdan default", lambda p: dadaptation.DAdaptAdan(p, lr=1.0))
run("DAdaptLion", lambda p: dadaptation.DAdaptLion(p, lr=1.0))
run("DAdaptSGD", lambda p: dadaptation.DAdaptSGD(p, lr=1.0))
run("DAdaptAdam preprint", lambda p: dadapt_adam_preprint.DAdaptAdamPreprint(p, lr=1.0))
run("DAdaptAdanIP", lambda p: dadapt_adan_ip.DAdaptAdanIP(p, lr=1.0))
