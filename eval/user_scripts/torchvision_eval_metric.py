"""torchvision mobilenet_v3_small in eval: a compiled evaluation step that updates running metrics."""
import torch
from torchvision.models import mobilenet_v3_small

torch.manual_seed(0)
model = mobilenet_v3_small(num_classes=10).eval()
stats = {"correct": 0, "seen": 0, "top5": 0}


def evaluate_batch(images, labels):
    logits = model(images)
    top5 = logits.topk(5, dim=1).indices
    stats["correct"] += int((top5[:, 0] == labels).sum())
    stats["top5"] += (top5 == labels[:, None]).any(dim=1).sum().item()
    stats["seen"] += labels.numel()
    return logits.softmax(dim=1)


evaluate_batch = torch.compile(evaluate_batch)

with torch.no_grad():
    for _ in range(2):
        probs = evaluate_batch(torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,)))
print({k: v for k, v in stats.items()}, "acc", stats["correct"] / stats["seen"])
