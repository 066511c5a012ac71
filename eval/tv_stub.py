"""Make the installed torchvision importable on torch 2.13.0+cpu.

PyPI's torchvision wheels (0.26-0.29) are built against CUDA torch: their ``_C.so`` /
``_C_stable.so`` need ``libc10_cuda.so`` and ``libtorch_cuda.so`` and cannot load on the CPU
build.  torchvision then fails at import, in ``_meta_registrations.py``, because it registers
fake kernels for operators (``torchvision::nms`` ...) that the missing library would have
defined.  We define those operator *schemas* (no kernels) before torchvision is imported, so
``import torchvision`` (and transformers / timm, which import it) succeed.  Calling one of
these ops (nms, roi_align, deform_conv2d ...) still raises; none of the models in the
evaluation calls them.  Schemas are torchvision's own (csrc/ops/*.cpp).
"""

from __future__ import annotations

SCHEMAS = [
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
]

_LIB = None
STUBBED = False


def install() -> bool:
    """Define the schemas if torchvision's native library cannot provide them.  Idempotent."""
    global _LIB, STUBBED
    import torch

    try:
        torch._C._dispatch_find_schema_or_throw("torchvision::nms", "")
        return STUBBED  # already defined (a working native torchvision, or us)
    except RuntimeError:
        pass
    _LIB = torch.library.Library("torchvision", "DEF")  # kept alive: dropping it undefines
    for schema in SCHEMAS:
        _LIB.define(schema)
    STUBBED = True
    return True
