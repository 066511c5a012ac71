"""lightly: self-supervised learning heads, memory banks, losses and the MAE masked ViT, put
together as lightly's examples do (a small user `nn.Module` holding a backbone, lightly's heads
and loss, whose forward returns the training loss).  Batch 2 -> 3 -> 4; images 32 -> 40 -> 48
where a CNN backbone allows it (the ViT of the MAE example has a fixed image size).
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "lightly"
DIST = "lightly==1.6.0"

_BATCH = (2, 3, 4)
_IMG = (32, 40, 48)


def _views(shape):
    b, s = _BATCH[shape], _IMG[shape]
    return torch.rand(b, 3, s, s), torch.rand(b, 3, s, s)


def _emb(shape, dim=32, grad=True):
    b = _BATCH[shape]
    return torch.randn(b, dim, requires_grad=grad), torch.randn(b, dim, requires_grad=grad)


def _resnet_backbone():
    import torchvision

    resnet = torchvision.models.resnet18()
    return nn.Sequential(*list(resnet.children())[:-1])  # up to the global pooling: 512 features


def _small_backbone(dim=64):
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, dim, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1))


class _TwoViewLoss(nn.Module):
    """backbone -> head(s) on both views -> loss, as in lightly's SimCLR / BYOL examples."""

    def __init__(self, backbone, head, criterion, predictor=None):
        super().__init__()
        self.backbone, self.head, self.criterion, self.predictor = backbone, head, criterion, predictor

    def embed(self, x):
        z = self.head(self.backbone(x).flatten(start_dim=1))
        return self.predictor(z) if self.predictor is not None else z

    def forward(self, x0, x1):
        return self.criterion(self.embed(x0), self.embed(x1))


def simclr(shape=0):
    from lightly.loss import NTXentLoss
    from lightly.models.modules import SimCLRProjectionHead

    model = _TwoViewLoss(_resnet_backbone(), SimCLRProjectionHead(512, 512, 128), NTXentLoss())
    return model.train(), _views(shape), {}


def byol_heads(shape=0):
    from lightly.loss import NegativeCosineSimilarity
    from lightly.models.modules import BYOLPredictionHead, BYOLProjectionHead

    model = _TwoViewLoss(_small_backbone(), BYOLProjectionHead(64, 128, 32), NegativeCosineSimilarity(),
                         predictor=BYOLPredictionHead(32, 128, 32))
    return model.train(), _views(shape), {}


def barlow_twins(shape=0):
    from lightly.loss import BarlowTwinsLoss
    from lightly.models.modules import BarlowTwinsProjectionHead

    model = _TwoViewLoss(_small_backbone(), BarlowTwinsProjectionHead(64, 128, 128), BarlowTwinsLoss())
    return model.train(), _views(shape), {}


def moco_head_eval(shape=0):
    from lightly.models.modules import MoCoProjectionHead

    b = _BATCH[shape]
    return MoCoProjectionHead(64, 128, 32).eval(), (torch.randn(b, 64),), {}


def ntxent_memory_bank(shape=0):
    from lightly.loss import NTXentLoss

    return NTXentLoss(memory_bank_size=(64, 32)).train(), _emb(shape), {}


def vicreg_loss(shape=0):
    from lightly.loss import VICRegLoss

    return VICRegLoss().train(), _emb(shape), {}


def dclw_loss(shape=0):
    from lightly.loss import DCLWLoss

    return DCLWLoss().train(), _emb(shape), {}


def tico_loss(shape=0):
    from lightly.loss import TiCoLoss

    return TiCoLoss().train(), _emb(shape), {}


def mmcr_loss(shape=0):
    from lightly.loss import MMCRLoss

    b = _BATCH[shape]
    # (batch, views, dim), as MMCR's online / momentum projections
    return MMCRLoss().train(), (torch.randn(b, 4, 32, requires_grad=True), torch.randn(b, 4, 32)), {}


def koleo_loss(shape=0):
    from lightly.loss import KoLeoLoss

    return KoLeoLoss().train(), (_emb(shape)[0],), {}


class _DINO(nn.Module):
    """lightly's DINO example: student and teacher backbones + DINO heads, DINOLoss over
    two global views."""

    def __init__(self):
        super().__init__()
        import copy

        from lightly.loss import DINOLoss
        from lightly.models.modules import DINOProjectionHead

        self.student_backbone = _small_backbone()
        self.student_head = DINOProjectionHead(64, 128, 16, 64, freeze_last_layer=1)
        self.teacher_backbone = copy.deepcopy(self.student_backbone)
        self.teacher_head = DINOProjectionHead(64, 128, 16, 64)
        for p in list(self.teacher_backbone.parameters()) + list(self.teacher_head.parameters()):
            p.requires_grad = False
        self.criterion = DINOLoss(output_dim=64, warmup_teacher_temp_epochs=5)

    def forward(self, x0, x1, epoch: int = 0):
        views = [x0, x1]
        teacher = [self.teacher_head(self.teacher_backbone(v).flatten(start_dim=1)) for v in views]
        student = [self.student_head(self.student_backbone(v).flatten(start_dim=1)) for v in views]
        return self.criterion(teacher, student, epoch=epoch)


def dino(shape=0):
    # Built under no_grad: DINOProjectionHead's (legacy) weight_norm otherwise leaves a non-leaf
    # `last_layer.weight` that deepcopy refuses (the evaluation copies the model); its forward
    # pre-hook recomputes that weight from weight_g / weight_v on every call either way.
    with torch.no_grad():
        model = _DINO()
    return model.train(), _views(shape), {"epoch": 0}


class _SwaV(nn.Module):
    """lightly's SwaV example: projection head, prototypes, SwaVLoss over two high and two
    low resolution crops."""

    def __init__(self):
        super().__init__()
        from lightly.loss import SwaVLoss
        from lightly.models.modules import SwaVProjectionHead, SwaVPrototypes

        self.backbone = _small_backbone()
        self.projection_head = SwaVProjectionHead(64, 128, 32)
        self.prototypes = SwaVPrototypes(32, n_prototypes=16)
        self.criterion = SwaVLoss()

    def _proto(self, x):
        x = nn.functional.normalize(self.projection_head(self.backbone(x).flatten(start_dim=1)), dim=1, p=2)
        return self.prototypes(x)

    def forward(self, high0, high1, low0, low1):
        self.prototypes.normalize()
        high = [self._proto(v) for v in (high0, high1)]
        low = [self._proto(v) for v in (low0, low1)]
        return self.criterion(high, low)


def swav(shape=0):
    b, s = _BATCH[shape], _IMG[shape]
    crops = [torch.rand(b, 3, s, s) for _ in range(2)] + [torch.rand(b, 3, s // 2, s // 2) for _ in range(2)]
    return _SwaV().train(), tuple(crops), {}


class _NNCLR(nn.Module):
    """lightly's NNCLR example: nearest-neighbour memory bank between projection and loss."""

    def __init__(self):
        super().__init__()
        from lightly.loss import NTXentLoss
        from lightly.models.modules import NNCLRPredictionHead, NNCLRProjectionHead, NNMemoryBankModule

        self.backbone = _small_backbone()
        self.projection_head = NNCLRProjectionHead(64, 128, 32)
        self.prediction_head = NNCLRPredictionHead(32, 128, 32)
        self.memory_bank = NNMemoryBankModule(size=(64, 32))
        self.criterion = NTXentLoss()

    def forward(self, x0, x1):
        z0 = self.projection_head(self.backbone(x0).flatten(start_dim=1))
        p0 = self.prediction_head(z0)
        z1 = self.projection_head(self.backbone(x1).flatten(start_dim=1))
        p1 = self.prediction_head(z1)
        z0 = self.memory_bank(z0.detach(), update=False)
        z1 = self.memory_bank(z1.detach(), update=True)
        return 0.5 * (self.criterion(z0, p1) + self.criterion(z1, p0))


def nnclr(shape=0):
    return _NNCLR().train(), _views(shape), {}


class _MAE(nn.Module):
    """lightly's MAE example (timm ViT backbone, masked encoder, MAE decoder), returning the
    reconstruction loss."""

    def __init__(self, vit):
        super().__init__()
        from lightly.models.modules import MAEDecoderTIMM, MaskedVisionTransformerTIMM

        self.mask_ratio = 0.75
        self.patch_size = vit.patch_embed.patch_size[0]
        self.backbone = MaskedVisionTransformerTIMM(vit=vit)
        self.sequence_length = self.backbone.sequence_length
        self.decoder = MAEDecoderTIMM(num_patches=vit.patch_embed.num_patches, patch_size=self.patch_size,
                                      embed_dim=vit.embed_dim, decoder_embed_dim=32, decoder_depth=1,
                                      decoder_num_heads=2, mlp_ratio=2.0)
        self.criterion = nn.MSELoss()

    def forward_decoder(self, x_encoded, idx_keep, idx_mask):
        from lightly.models import utils

        batch_size = x_encoded.shape[0]
        x_decode = self.decoder.embed(x_encoded)
        x_masked = utils.repeat_token(self.decoder.mask_token, (batch_size, self.sequence_length))
        x_masked = utils.set_at_index(x_masked, idx_keep, x_decode.type_as(x_masked))
        x_decoded = self.decoder.decode(x_masked)
        x_pred = utils.get_at_index(x_decoded, idx_mask)
        return self.decoder.predict(x_pred)

    def forward(self, images):
        from lightly.models import utils

        batch_size = images.shape[0]
        idx_keep, idx_mask = utils.random_token_mask(size=(batch_size, self.sequence_length),
                                                     mask_ratio=self.mask_ratio, device=images.device)
        x_encoded = self.backbone.encode(images=images, idx_keep=idx_keep)
        x_pred = self.forward_decoder(x_encoded, idx_keep, idx_mask)
        patches = utils.patchify(images, self.patch_size)
        target = utils.get_at_index(patches, idx_mask - 1)  # the class token is not a patch
        return self.criterion(x_pred, target)


def mae(shape=0):
    from timm.models.vision_transformer import VisionTransformer

    vit = VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0)
    return _MAE(vit).train(), (torch.rand(_BATCH[shape], 3, 32, 32),), {}


MODELS = {
    "lightly_simclr": ("train", simclr),
    "lightly_byol_heads": ("train", byol_heads),
    "lightly_barlow_twins": ("train", barlow_twins),
    "lightly_moco_head_eval": ("eval", moco_head_eval),
    "lightly_ntxent_memory_bank": ("train", ntxent_memory_bank),
    "lightly_vicreg_loss": ("train", vicreg_loss),
    "lightly_dclw_loss": ("train", dclw_loss),
    "lightly_tico_loss": ("train", tico_loss),
    "lightly_mmcr_loss": ("train", mmcr_loss),
    "lightly_koleo_loss": ("train", koleo_loss),
    "lightly_dino": ("train", dino),
    "lightly_swav": ("train", swav),
    "lightly_nnclr": ("train", nnclr),
    "lightly_mae": ("train", mae),
}
