"""timm: a tiny ViT (num_classes=10, 32x32 images) trained with a compiled step."""
import timm
import torch
import torch.nn.functional as F

torch.manual_seed(0)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32,
                          patch_size=8, depth=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


@torch.compile
def train_step(images, targets):
    logits = model(images)
    loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


if __name__ == "__main__":
    model.train()
    for _ in range(2):
        images, targets = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
        print("loss", float(train_step(images, targets)))
