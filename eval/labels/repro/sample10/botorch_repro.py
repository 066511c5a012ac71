import torch, sys, warnings, numpy as np
warnings.filterwarnings("ignore")
from util import breaks
torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
which = sys.argv[1:]
def on(k): return not which or k in which

if on("setpending"):
    from botorch.models import SingleTaskGP
    from botorch.acquisition import qExpectedImprovement
    X = torch.rand(10, 2); Y = X.sum(-1, keepdim=True)
    acq = qExpectedImprovement(SingleTaskGP(X, Y), best_f=Y.max())
    def f(xp): acq.set_X_pending(xp); return xp * 2
    print("== set_X_pending with grad-requiring X_pending"); breaks(f, torch.rand(2, 2, requires_grad=True))
    print("== set_X_pending with plain X_pending"); breaks(f, torch.rand(2, 2))
if on("cost"):
    from botorch.acquisition.cost_aware import InverseCostWeightedUtility
    from botorch.models.deterministic import GenericDeterministicModel
    cm = GenericDeterministicModel(lambda X: 1.0 + X.sum(-1, keepdim=True).expand(*X.shape[:-1], 2), num_outputs=2)
    u = InverseCostWeightedUtility(cost_model=cm, use_mean=True)
    X = torch.rand(3, 1, 2); deltas = torch.rand(4, 3)
    mask = torch.tensor([[True, False]]).expand(1, 2)
    def f(X, d): return u(X, d, X_evaluation_mask=mask)
    print("== InverseCostWeightedUtility with X_evaluation_mask"); breaks(f, X, deltas)
if on("mvar"):
    from botorch.acquisition.multi_objective.multi_output_risk_measures import MVaR, MARS
    mv = MVaR(n_w=16, alpha=0.5, use_counting=True)
    print("== MVaR(use_counting=True) forward"); breaks(mv, torch.rand(2, 3 * 16, 2))
    mars = MARS(alpha=0.5, n_w=16, chebyshev_weights=[0.5, 0.5], ref_point=[0.0, 0.0])
    Xb = torch.rand(8, 2); Yb = torch.rand(8, 2)
    def g(Y): return mars._get_Y_normalization_bounds(Y, ref_point=torch.tensor([0.1, 0.1]))
    print("== MARS._get_Y_normalization_bounds with ref_point"); breaks(g, torch.rand(16, 2))
if on("pes"):
    from botorch.acquisition.multi_objective.predictive_entropy_search import _update_damping
    A = torch.randn(2, 4, 4); nc = A @ A.transpose(-1, -2) + torch.eye(4)
    bad = -nc  # not PD -> enters the while loop
    print("== PES _update_damping, new cov not PD"); breaks(_update_damping, nc, bad, torch.ones(2), torch.tensor(1e-6))
if on("prune"):
    from botorch.models import SingleTaskGP
    from botorch.acquisition.utils import prune_inferior_points
    X = torch.rand(10, 2); Y = X.sum(-1, keepdim=True)
    m = SingleTaskGP(X, Y).eval()
    print("== prune_inferior_points"); breaks(lambda X: prune_inferior_points(m, X), X)
if on("flip"):
    from botorch.generation.utils import _flip_sub_unique
    print("== _flip_sub_unique on 3 different inputs (same shape) -- recompiles?")
    breaks(lambda x: _flip_sub_unique(x, 3), calls=[(torch.randint(0, 20, (8,)),) for _ in range(3)])
if on("npnormal"):
    def f(x):
        a = x.detach().numpy()
        a = a + 0.05 * np.random.standard_normal(a.shape)
        return torch.as_tensor(a) * 2
    print("== np.random.standard_normal on ndarray"); breaks(f, torch.rand(5))
    def g(x):
        np.random.seed(3)
        return x * 2
    print("== np.random.seed"); breaks(g, torch.rand(5))
    def h(x):
        torch.manual_seed(3)
        return x * 2
    print("== torch.manual_seed"); breaks(h, torch.rand(5))
if on("pairwise"):
    from botorch.models import PairwiseGP
    from botorch.sampling.pairwise_samplers import PairwiseSobolQMCNormalSampler
    from botorch.models.pairwise_gp import PairwiseLaplaceMarginalLogLikelihood
    Xp = torch.rand(6, 2); comp = torch.tensor([[0, 1], [2, 3], [4, 5], [1, 2]])
    pm = PairwiseGP(Xp, comp)
    sampler = PairwiseSobolQMCNormalSampler(sample_shape=torch.Size([4]), seed=0)
    post = pm.posterior(torch.rand(3, 2))
    print("== PairwiseSobolQMCNormalSampler forward"); breaks(sampler, post)
    def upd(d):
        pm._x0 = None
        pm._update(d)
        return d * 1
    print("== PairwiseGP._update with _x0 reset (warm-start branch)"); breaks(upd, Xp)
if on("stratified"):
    from botorch.models.transforms.outcome import StratifiedStandardize
    st = StratifiedStandardize(stratification_idx=2, all_task_values=torch.tensor([0, 1, 2]))
    X = torch.cat([torch.rand(10, 2), torch.randint(0, 2, (10, 1)).double()], -1); Y = torch.rand(10, 1)
    st(Y, X=X); st.eval()
    print("== StratifiedStandardize.untransform (eval)"); breaks(lambda Y, X: st.untransform(Y, X=X), Y, X)
if on("bilog"):
    from botorch.models.transforms.outcome import Bilog
    b = Bilog(outputs=[0])
    print("== Bilog(outputs=[0]) forward over 3 batch sizes")
    breaks(lambda Y: b(Y)[0], calls=[(torch.rand(n, 2),) for n in (5, 9, 17, 33)])
if on("testfn"):
    from botorch.test_functions import multi_fidelity as mf, multi_objective as mo, synthetic as syn
    from botorch.test_functions.base import CorruptedTestProblem
    for name in dir(mf):
        pass
    from functools import partial
    from botorch.test_functions.base import constant_outlier_generator
    cp = CorruptedTestProblem(syn.Levy(dim=2), outlier_generator=partial(constant_outlier_generator, constant=100.0), outlier_fraction=0.2, seeds=[1, 2, 3, 4, 5])
    print("== CorruptedTestProblem with seeds forward"); breaks(cp, torch.rand(5, 2))
    pen = mo.Penicillin()
    Xpen = pen.bounds[0] + (pen.bounds[1] - pen.bounds[0]) * torch.rand(3, 7)
    print("== Penicillin forward"); breaks(pen, Xpen)
    tp = syn.TrajectoryPlanning() if hasattr(syn, "TrajectoryPlanning") else None
    if tp is not None:
        Xt = tp.bounds[0] + (tp.bounds[1] - tp.bounds[0]) * torch.rand(2, tp.dim)
        print("== TrajectoryPlanning forward"); breaks(tp, Xt)
if on("mf"):
    import inspect
    from botorch.test_functions import multi_fidelity as mf
    src = open(mf.__file__).read().split("\n")
    for cname in [n for n, c in inspect.getmembers(mf, inspect.isclass) if c.__module__ == mf.__name__]:
        cls = getattr(mf, cname)
        try:
            lines, start = inspect.getsourcelines(cls)
        except Exception: continue
        if not (start <= 254 < start + len(lines) or start <= 339 < start + len(lines)): continue
        p = cls()
        X = p.bounds[0] + (p.bounds[1] - p.bounds[0]) * torch.rand(12, p.dim)
        X[:, -1] = torch.tensor([0., 1, 2, 3] * 3)  # discrete fidelities 0..3 in last col
        print(f"== {cname} forward (mixed fidelities)"); breaks(p, X)
if on("box"):
    from botorch.utils.multi_objective.box_decompositions import FastNondominatedPartitioning, NondominatedPartitioning
    from botorch.utils.multi_objective.box_decompositions.utils import _pad_batch_pareto_frontier, compute_local_upper_bounds, get_partition_bounds
    ref = torch.zeros(3); Y = torch.rand(12, 3)
    print("== FastNondominatedPartitioning(ref, Y) constructor"); breaks(lambda Y: FastNondominatedPartitioning(ref, Y=Y).get_hypercell_bounds(), Y)
    print("== _pad_batch_pareto_frontier (no batch)"); breaks(lambda Y: _pad_batch_pareto_frontier(Y, ref) * 1, Y)
    print("== get_partition_bounds over 3 sizes")
    def gpb(n):
        U = torch.rand(n, 3); Z = torch.rand(n, 3, 3); return (U, Z, ref)
    pass  # (shape of Z not worked out; TCL505 label for utils.py:186 decided by reading: U.shape[-1] is the number of outcomes)
if on("pareto"):
    from botorch.utils.multi_objective.pareto import _is_non_dominated_loop
    print("== _is_non_dominated_loop deduplicate=False over 3 n")
    breaks(lambda Y: _is_non_dominated_loop(Y, deduplicate=False), calls=[(torch.rand(n, 2),) for n in (6, 9, 13)])
if on("bvn"):
    from botorch.utils.probability.bvn import _bvnu_polar, bvnu
    r = torch.rand(5) * 0.9; h = torch.randn(5); k = torch.randn(5)
    print("== _bvnu_polar"); breaks(_bvnu_polar, r, h, k)
if on("mvnxpb"):
    from botorch.utils.probability.mvnxpb import MVNXPB
    A = torch.randn(4, 4); cov = A @ A.T + torch.eye(4)
    bounds = torch.stack([-torch.ones(4), torch.ones(4)], -1)
    def s(cov, bounds):
        return MVNXPB(cov, bounds).solve()
    print("== MVNXPB(cov, bounds).solve()"); breaks(s, cov, bounds)
if on("normalize"):
    from botorch.utils.transforms import normalize
    b = torch.tensor([[0.0, 1.0, 2.0], [1.0, 1.0, 4.0]])  # middle dim constant
    print("== normalize with a constant dim"); breaks(lambda X: normalize(X, b), torch.rand(5, 3))
