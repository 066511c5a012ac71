"""TCL505 gpytorch/mlls/gamma_robust_variational_elbo.py:105
`factor = factor.sum(list(range(-1, -num_event_dim, -1)))` with num_event_dim = len(event_shape):
the *rank* of the event shape (2 for a multitask GP: (n, tasks)), not a size of it. len() of a
torch.Size is a plain int in Dynamo whatever the sizes, so the number of data points stays
symbolic. A multitask SVGP (IndependentMultitaskVariationalStrategy, 2 tasks) and
GammaRobustVariationalELBO.forward(output, y) compiled over n = 4/6/8/10 training points."""
import _common
import torch
import gpytorch

torch.manual_seed(0)
T = 2


class MTGP(gpytorch.models.ApproximateGP):
    def __init__(self):
        inducing = torch.rand(T, 5, 1)
        vd = gpytorch.variational.CholeskyVariationalDistribution(5, batch_shape=torch.Size([T]))
        vs = gpytorch.variational.IndependentMultitaskVariationalStrategy(
            gpytorch.variational.VariationalStrategy(self, inducing, vd, learn_inducing_locations=True),
            num_tasks=T)
        super().__init__(vs)
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=torch.Size([T]))
        self.covar_module = gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.RBFKernel(batch_shape=torch.Size([T])), batch_shape=torch.Size([T]))

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


model = MTGP()
lik = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=T)
mll = gpytorch.mlls.GammaRobustVariationalELBO(lik, model, num_data=100)
model.train(); lik.train()


def loss(x, y):
    out = model(x)
    return -mll(out, y)


def data(n):
    x = torch.rand(n, 1)
    return (x, torch.randn(n, T))


print("event_shape of the output:", model(torch.rand(4, 1)).event_shape,
      "-> num_event_dim =", len(model(torch.rand(4, 1)).event_shape), "at n = 4 (and at every n)")
_common.breaks(loss, *data(4))
pers = _common.persistent_report(loss, [data(n) for n in (4, 6, 8, 10)], "GammaRobustVariationalELBO n 4/6/8/10:",
                                  frames_like=("_log_likelihood_term",))

# Line 105 itself: _log_likelihood_term on a multitask Gaussian built inside the compiled function.
from gpytorch.distributions import MultitaskMultivariateNormal
from linear_operator.operators import DiagLinearOperator


def term(mean, var, y):
    f = MultitaskMultivariateNormal(mean, DiagLinearOperator(var.reshape(-1)))
    return mll._log_likelihood_term(f, y).sum()


def tdata(n):
    return (torch.randn(n, T), torch.rand(n, T) + 0.1, torch.randn(n, T))


print("_log_likelihood_term alone (reaches line 105: num_event_dim = 2)")
_common.breaks(term, *tdata(4))
_common.persistent_report(term, [tdata(n) for n in (4, 6, 8, 10)], "_log_likelihood_term n 4/6/8/10:",
                          frames_like=("_log_likelihood_term",))

# In the runs above Dynamo does not trace past line 82 of _log_likelihood_term (it breaks in
# _shaped_noise_covar); lines 101-107 traced on their own, event_shape = (n, tasks) of the input:
def tail(factor):
    event_shape = factor.shape[-2:]
    num_event_dim = len(event_shape)
    if num_event_dim > 1:
        factor = factor.sum(list(range(-1, -num_event_dim, -1)))
    return factor.sum(-1)


print("lines 101-107 traced, factor (n, 2) with n 4/6/8/10")
_common.breaks(tail, torch.randn(4, T))
_common.persistent_report(tail, [(torch.randn(n, T),) for n in (4, 6, 8, 10)], "lines 101-107, n 4/6/8/10:")
