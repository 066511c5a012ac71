"""nflows: a small masked autoregressive flow; compiled log_prob for training and compiled sampling."""
import torch
from nflows.distributions.normal import StandardNormal
from nflows.flows.base import Flow
from nflows.transforms.autoregressive import MaskedAffineAutoregressiveTransform
from nflows.transforms.base import CompositeTransform
from nflows.transforms.permutations import ReversePermutation

torch.manual_seed(0)
transforms = []
for _ in range(2):
    transforms.append(ReversePermutation(features=2))
    transforms.append(MaskedAffineAutoregressiveTransform(features=2, hidden_features=16))
flow = Flow(CompositeTransform(transforms), StandardNormal(shape=[2]))
optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)

log_prob = torch.compile(flow.log_prob)
sample = torch.compile(flow.sample)

x = torch.randn(64, 2)
loss = -log_prob(inputs=x).mean()
loss.backward()
optimizer.step()
with torch.no_grad():
    print(sample(8).shape)
