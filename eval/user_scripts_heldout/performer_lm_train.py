"""performer-pytorch: a tiny causal PerformerLM, `torch.compile(model)` used in a next-token training loop."""
import torch
import torch.nn.functional as F
from performer_pytorch import PerformerLM

torch.manual_seed(0)
model = PerformerLM(
    num_tokens=100,
    max_seq_len=32,
    dim=32,
    depth=2,
    heads=2,
    causal=True,
    nb_features=16,
    feature_redraw_interval=2,
    ff_chunks=2,
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
compiled = torch.compile(model)

for step in range(3):
    x = torch.randint(0, 100, (2, 32))
    mask = torch.ones_like(x).bool()
    logits = compiled(x[:, :-1], mask=mask[:, :-1])
    loss = F.cross_entropy(logits.transpose(1, 2), x[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
