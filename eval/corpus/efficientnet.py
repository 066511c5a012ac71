"""efficientnet-pytorch: EfficientNet built with `from_name` (random weights, never `from_pretrained`).

Shapes: batch 2 -> 3 -> 4 and image size 32 -> 40 -> 48.
"""

from __future__ import annotations

import torch

LIBRARY = "efficientnet_pytorch"
DIST = "efficientnet-pytorch==0.7.1"

B = (2, 3, 4)
S = (32, 40, 48)


def _images(shape, channels=3):
    return torch.randn(B[shape], channels, S[shape], S[shape])


def _net(name="efficientnet-b0", **kw):
    from efficientnet_pytorch import EfficientNet

    return EfficientNet.from_name(name, num_classes=5, **kw)


def b0_eval(shape=0):
    """image_size unset: Conv2dDynamicSamePadding computes TF "SAME" padding per call."""
    return _net().eval(), (_images(shape),), {}


def b0_static_padding_eval(shape=0):
    """image_size given: Conv2dStaticSamePadding with the padding fixed at construction."""
    return _net(image_size=32).eval(), (_images(shape),), {}


def b0_train(shape=0):
    """Training: dropout, drop-connect and the memory-efficient Swish (a custom autograd.Function)."""
    return _net(dropout_rate=0.2, drop_connect_rate=0.2).train(), (_images(shape),), {}


def b0_plain_swish_train(shape=0):
    model = _net()
    model.set_swish(memory_efficient=False)
    return model.train(), (_images(shape),), {}


def b1_grayscale_eval(shape=0):
    """A different compound scaling and a one-channel stem."""
    return _net("efficientnet-b1", in_channels=1).eval(), (_images(shape, channels=1),), {}


def b0_extract_features(shape=0):
    model = _net().eval()
    return model.extract_features, (_images(shape),), {}


def b0_extract_endpoints(shape=0):
    """The reduction_1..6 feature maps as a dict (a detection / segmentation backbone)."""
    model = _net().eval()
    return model.extract_endpoints, (_images(shape),), {}


def custom_blocks_train(shape=0):
    """A hand-sized network through `get_model_params` (width / depth coefficients, block strings)."""
    from efficientnet_pytorch import EfficientNet
    from efficientnet_pytorch.utils import BlockDecoder, get_model_params

    blocks = ["r1_k3_s11_e1_i32_o16_se0.25", "r2_k3_s22_e6_i16_o24_se0.25", "r1_k5_s22_e6_i24_o40_se0.25"]
    _, global_params = get_model_params("efficientnet-b0", {"num_classes": 5, "width_coefficient": 0.5,
                                                            "depth_coefficient": 0.5})
    model = EfficientNet(BlockDecoder.decode(blocks), global_params)
    return model.train(), (_images(shape),), {}


MODELS = {
    "efficientnet_b0_eval": ("eval", b0_eval),
    "efficientnet_b0_static_padding_eval": ("eval", b0_static_padding_eval),
    "efficientnet_b0_train": ("train", b0_train),
    "efficientnet_b0_plain_swish_train": ("train", b0_plain_swish_train),
    "efficientnet_b1_grayscale_eval": ("eval", b1_grayscale_eval),
    "efficientnet_b0_extract_features": ("eval", b0_extract_features),
    "efficientnet_b0_extract_endpoints": ("eval", b0_extract_endpoints),
    "efficientnet_custom_blocks_train": ("train", custom_blocks_train),
}
