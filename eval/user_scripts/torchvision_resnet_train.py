"""torchvision resnet18(num_classes=10): compiled model, a plain training loop with a scheduler."""
import torch
import torch.nn as nn
from torchvision.models import resnet18

torch.manual_seed(0)
net = resnet18(num_classes=10)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
compiled_net = torch.compile(net)

net.train()
for epoch in range(2):
    inputs, labels = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    loss = criterion(compiled_net(inputs), labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    print(epoch, loss.item())
