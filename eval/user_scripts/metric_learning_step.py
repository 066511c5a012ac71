"""pytorch-metric-learning: an embedding net trained with a miner and a triplet loss, compiled step."""
import torch
import torch.nn as nn
from pytorch_metric_learning import losses, miners

torch.manual_seed(0)
embedder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
miner = miners.MultiSimilarityMiner(epsilon=0.1)
loss_func = losses.TripletMarginLoss(margin=0.2)
optimizer = torch.optim.Adam(embedder.parameters(), lr=1e-3)


def train_step(data, labels):
    embeddings = embedder(data)
    hard_pairs = miner(embeddings, labels)
    loss = loss_func(embeddings, labels, hard_pairs)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


step = torch.compile(train_step)
for _ in range(2):
    data, labels = torch.randn(12, 16), torch.randint(0, 3, (12,))
    print("loss", step(data, labels).item())
