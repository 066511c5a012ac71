"""zuko: normalizing flows.  As zuko's README trains and samples them:

    flow = zuko.flows.NSF(features=3, context=5, transforms=3, hidden_features=[128] * 3)
    loss = -flow(c).log_prob(x).mean()
    x = flow(c).rsample()

each target is a function of tensors that builds the flow's distribution and calls its
`log_prob` (a loss, train mode) or `rsample` / `sample` (eval mode).
"""

from __future__ import annotations

import torch

LIBRARY = "zuko"
DIST = "zuko==1.6.0"

FEATURES, CONTEXT = 3, 5
_BATCH = (2, 3, 4)


def _xc(shape, context=True):
    b = _BATCH[shape]
    x = torch.randn(b, FEATURES)
    return (x, torch.randn(b, CONTEXT)) if context else (x,)


def _nll(flow):
    def nll(x, c):
        return -flow(c).log_prob(x).mean()

    return nll


def _nll_uncond(flow):
    def nll(x):
        return -flow().log_prob(x).mean()

    return nll


def _rsample(flow):
    def rsample(c):
        return flow(c).rsample()

    return rsample


def nsf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.NSF(features=FEATURES, context=CONTEXT, transforms=3, hidden_features=[32] * 3).train()
    return _nll(flow), _xc(shape), {}


def nsf_rsample(shape=0):
    import zuko

    flow = zuko.flows.NSF(features=FEATURES, context=CONTEXT, transforms=3, hidden_features=[32] * 3).eval()
    return _rsample(flow), (_xc(shape)[1],), {}


def maf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.MAF(features=FEATURES, context=CONTEXT, transforms=3, hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def maf_rsample(shape=0):
    import zuko

    flow = zuko.flows.MAF(features=FEATURES, context=CONTEXT, transforms=3, hidden_features=[32] * 2).eval()
    return _rsample(flow), (_xc(shape)[1],), {}


def realnvp_log_prob(shape=0):
    import zuko

    flow = zuko.flows.RealNVP(features=FEATURES, transforms=3, hidden_features=[32] * 2).train()
    return _nll_uncond(flow), _xc(shape, context=False), {}


def nice_rsample(shape=0):
    import zuko

    flow = zuko.flows.NICE(features=FEATURES, transforms=3, hidden_features=[32] * 2).eval()
    n = _BATCH[shape]

    def sample(n):
        return flow().rsample((n,))

    return sample, (n,), {}


def naf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.NAF(features=FEATURES, context=CONTEXT, transforms=2, hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def unaf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.UNAF(features=FEATURES, context=CONTEXT, transforms=2, hidden_features=[32] * 2).eval()
    return _nll(flow), _xc(shape), {}


def sospf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.SOSPF(features=FEATURES, context=CONTEXT, transforms=2, hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def bpf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.BPF(features=FEATURES, context=CONTEXT, transforms=2, hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def gmm_log_prob(shape=0):
    import zuko

    flow = zuko.flows.GMM(features=FEATURES, context=CONTEXT, components=4, hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def gf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.GF(features=FEATURES, context=CONTEXT, transforms=2, components=4,
                         hidden_features=[32] * 2).train()
    return _nll(flow), _xc(shape), {}


def cnf_log_prob(shape=0):
    import zuko

    flow = zuko.flows.CNF(features=FEATURES, context=CONTEXT, hidden_features=[32] * 2, exact=True).eval()
    return _nll(flow), _xc(shape), {}


MODELS = {
    "zuko_nsf_log_prob": ("train", nsf_log_prob),
    "zuko_nsf_rsample": ("eval", nsf_rsample),
    "zuko_maf_log_prob": ("train", maf_log_prob),
    "zuko_maf_rsample": ("eval", maf_rsample),
    "zuko_realnvp_log_prob": ("train", realnvp_log_prob),
    "zuko_nice_rsample": ("eval", nice_rsample),
    "zuko_naf_log_prob": ("train", naf_log_prob),
    "zuko_unaf_log_prob": ("eval", unaf_log_prob),
    "zuko_sospf_log_prob": ("train", sospf_log_prob),
    "zuko_bpf_log_prob": ("train", bpf_log_prob),
    "zuko_gmm_log_prob": ("train", gmm_log_prob),
    "zuko_gf_log_prob": ("train", gf_log_prob),
    "zuko_cnf_log_prob": ("eval", cnf_log_prob),
}
