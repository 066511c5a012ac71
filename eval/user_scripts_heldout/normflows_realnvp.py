"""normflows: a RealNVP-style flow (README), compiled forward_kld training step and compiled sample."""
import normflows as nf
import torch

torch.manual_seed(0)
base = nf.distributions.base.DiagGaussian(2)

num_layers = 4
flows = []
for i in range(num_layers):
    param_map = nf.nets.MLP([1, 16, 16, 2], init_zeros=True)
    flows.append(nf.flows.AffineCouplingBlock(param_map))
    flows.append(nf.flows.Permute(2, mode="swap"))

model = nf.NormalizingFlow(base, flows)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, weight_decay=1e-5)


def train_step(x):
    optimizer.zero_grad()
    loss = model.forward_kld(x)
    if ~(torch.isnan(loss) | torch.isinf(loss)):
        loss.backward()
        optimizer.step()
    return loss


train_step = torch.compile(train_step)
sample = torch.compile(model.sample)
for _ in range(2):
    x = torch.randn(32, 2) * 0.5 + 1.0
    print("loss", train_step(x).item())
with torch.no_grad():
    z, log_prob = sample(16)
print(z.shape, log_prob.shape)
