"""gpytorch: Gaussian processes as gpytorch's tutorials write them.  Exact GPs (marginal log
likelihood on the training data, predictive posterior on test points), sparse variational GPs
(ELBO on a minibatch, prediction), multitask and batch-independent multi-output GPs,
deep kernel learning and kernel evaluation.  The size that changes is the number of points:
8 -> 12 -> 16 (test points, minibatch, or the training set given by `set_train_data`).
Left out: SGPR (`InducingPointKernel`), whose compiled call fails in Dynamo's fake-tensor run
inside linear_operator (`DiagLinearOperator.matmul`) while eager runs.
"""

from __future__ import annotations

import torch

LIBRARY = "gpytorch"
DIST = "gpytorch==1.15.2"

_N = (8, 12, 16)
N_TRAIN = 20


def _data(n, d=1, tasks=None):
    x = torch.rand(n, d)
    f = torch.sin(6.0 * x).sum(-1)
    if tasks is None:
        return x, f + 0.1 * torch.randn(n)
    return x, torch.stack([f * (t + 1) for t in range(tasks)], -1) + 0.1 * torch.randn(n, tasks)


def _exact_gp_class():
    import gpytorch

    class ExactGPModel(gpytorch.models.ExactGP):
        def __init__(self, train_x, train_y, likelihood, kernel=None):
            super().__init__(train_x, train_y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = kernel if kernel is not None else gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    return ExactGPModel


def exact_gp_mll(shape=0):
    import gpytorch

    train_x, train_y = _data(N_TRAIN)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = _exact_gp_class()(train_x, train_y, likelihood)
    model.train()
    likelihood.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)

    def loss(x, y):
        model.set_train_data(x, y, strict=False)
        return -mll(model(x), y)

    return loss, _data(_N[shape] * 2), {}


def exact_gp_predict(shape=0):
    import gpytorch

    train_x, train_y = _data(N_TRAIN)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = _exact_gp_class()(train_x, train_y, likelihood)
    model.eval()
    likelihood.eval()

    def predict(test_x):
        with gpytorch.settings.fast_pred_var():
            pred = likelihood(model(test_x))
            return pred.mean, pred.variance

    return predict, (torch.rand(_N[shape], 1),), {}


def spectral_mixture_predict(shape=0):
    import gpytorch

    train_x, train_y = _data(N_TRAIN)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    kernel = gpytorch.kernels.SpectralMixtureKernel(num_mixtures=3)
    kernel.initialize_from_data(train_x, train_y)
    model = _exact_gp_class()(train_x, train_y, likelihood, kernel=kernel)
    model.eval()
    likelihood.eval()

    def predict(test_x):
        pred = likelihood(model(test_x))
        lower, upper = pred.confidence_region()
        return pred.mean, lower, upper

    return predict, (torch.rand(_N[shape], 1),), {}


def _svgp(num_inducing=8, d=1, feature_extractor=None):
    import gpytorch

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, inducing_points):
            dist = gpytorch.variational.CholeskyVariationalDistribution(inducing_points.size(0))
            strategy = gpytorch.variational.VariationalStrategy(self, inducing_points, dist,
                                                                learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    return SVGP(torch.rand(num_inducing, d))


def svgp_elbo(shape=0):
    import gpytorch

    model = _svgp()
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=100)
    model.train()
    likelihood.train()

    def loss(x_batch, y_batch):
        return -mll(model(x_batch), y_batch)

    return loss, _data(_N[shape]), {}


def svgp_predict(shape=0):
    import gpytorch

    model = _svgp()
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model.eval()
    likelihood.eval()

    def predict(test_x):
        pred = likelihood(model(test_x))
        return pred.mean, pred.variance

    return predict, (torch.rand(_N[shape], 1),), {}


class _DKL(torch.nn.Module):
    """Deep kernel learning (gpytorch's SV-DKL pattern): a small MLP feature extractor feeding an
    approximate GP, trained with the variational ELBO."""

    def __init__(self):
        super().__init__()
        import gpytorch

        self.feature_extractor = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                                     torch.nn.Linear(16, 2))
        self.scale = gpytorch.utils.grid.ScaleToBounds(-1.0, 1.0)
        self.gp = _svgp(num_inducing=8, d=2)
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood()
        self.mll = gpytorch.mlls.VariationalELBO(self.likelihood, self.gp, num_data=100)

    def forward(self, x, y):
        z = self.scale(self.feature_extractor(x))
        return -self.mll(self.gp(z), y)


def dkl_elbo(shape=0):
    x, y = _data(_N[shape], d=4)
    return _DKL().train(), (x, y), {}


def multitask_predict(shape=0):
    import gpytorch

    class MultitaskGPModel(gpytorch.models.ExactGP):
        def __init__(self, train_x, train_y, likelihood):
            super().__init__(train_x, train_y, likelihood)
            self.mean_module = gpytorch.means.MultitaskMean(gpytorch.means.ConstantMean(), num_tasks=2)
            self.covar_module = gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), num_tasks=2, rank=1)

        def forward(self, x):
            return gpytorch.distributions.MultitaskMultivariateNormal(self.mean_module(x), self.covar_module(x))

    train_x, train_y = _data(N_TRAIN, tasks=2)
    likelihood = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2)
    model = MultitaskGPModel(train_x, train_y, likelihood)
    model.eval()
    likelihood.eval()

    def predict(test_x):
        pred = likelihood(model(test_x))
        return pred.mean, pred.variance

    return predict, (torch.rand(_N[shape], 1),), {}


def batch_independent_mll(shape=0):
    import gpytorch

    class BatchIndependentGP(gpytorch.models.ExactGP):
        def __init__(self, train_x, train_y, likelihood):
            super().__init__(train_x, train_y, likelihood)
            batch = torch.Size([2])
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch)
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(batch_shape=batch),
                                                             batch_shape=batch)

        def forward(self, x):
            mvn = gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))
            return gpytorch.distributions.MultitaskMultivariateNormal.from_batch_mvn(mvn)

    train_x, train_y = _data(N_TRAIN, tasks=2)
    likelihood = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2)
    model = BatchIndependentGP(train_x, train_y, likelihood)
    model.train()
    likelihood.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)

    def loss(x, y):
        model.set_train_data(x, y, strict=False)
        return -mll(model(x), y)

    return loss, _data(_N[shape] * 2, tasks=2), {}


def kernel_matrix(shape=0):
    import gpytorch

    kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=1.5)) + \
        gpytorch.kernels.ScaleKernel(gpytorch.kernels.PeriodicKernel())
    kernel.eval()

    def cov(x1, x2):
        return kernel(x1, x2).to_dense()

    n = _N[shape]
    return cov, (torch.rand(n, 2), torch.rand(n + 4, 2)), {}


MODELS = {
    "gpytorch_exact_gp_mll": ("train", exact_gp_mll),
    "gpytorch_exact_gp_predict": ("eval", exact_gp_predict),
    "gpytorch_spectral_mixture_predict": ("eval", spectral_mixture_predict),
    "gpytorch_svgp_elbo": ("train", svgp_elbo),
    "gpytorch_svgp_predict": ("eval", svgp_predict),
    "gpytorch_dkl_elbo": ("train", dkl_elbo),
    "gpytorch_multitask_predict": ("eval", multitask_predict),
    "gpytorch_batch_independent_mll": ("train", batch_independent_mll),
    "gpytorch_kernel_matrix": ("eval", kernel_matrix),
}
