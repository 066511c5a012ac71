"""pytorch-tcn: temporal convolutional networks (Bai et al. / WaveNet-style) as the README
shows them: the TCN class with weight, batch or layer norm, causal and non-causal, skip
connections, gated activations, global (1-D) and local (2-D) conditioning embeddings, an output
projection and activation, NLC input; the causal TemporalConv1d / TemporalConvTranspose1d layers;
and the streaming (real-time, block-wise) inference mode with its internal buffers.

All models are built from their constructors with random weights and a few channels.
Shapes: batch 2 -> 3 -> 4 of 3-channel series of 16 -> 24 -> 40 steps; the streaming targets take
one series (batch 1, as streaming requires) in blocks of 4 -> 8 -> 12 steps.
"""

from __future__ import annotations

import torch

LIBRARY = "pytorch_tcn"
DIST = "pytorch-tcn==1.2.3"

IN = 3
B = (2, 3, 4)
L = (16, 24, 40)
BLOCK = (4, 8, 12)


def _x(shape, batch=None, length=None, channels=IN):
    gen = torch.Generator().manual_seed(10 + shape)
    return torch.randn(B[shape] if batch is None else batch, channels, L[shape] if length is None else length,
                       generator=gen)


def tcn_forward(shape=0):
    """The default TCN (causal, weight norm, ReLU, dilations 1, 2, 4), eval mode."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8, 8], kernel_size=3).eval()
    return model, (_x(shape),), {}


def tcn_skip_batchnorm_train_loss(shape=0):
    """A TCN regressor on (batch, time, features) series: batch norm, WaveNet-style skip
    connections, a dilation reset, an output projection; the MSE training loss."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8, 16, 16], kernel_size=3, dilation_reset=2, use_norm="batch_norm",
                use_skip_connections=True, input_shape="NLC", output_projection=2, dropout=0.1).train()

    def loss_step(x, y):
        return torch.nn.functional.mse_loss(model(x), y)

    gen = torch.Generator().manual_seed(40 + shape)
    y = torch.randn(B[shape], L[shape], 2, generator=gen)
    return loss_step, (_x(shape).transpose(1, 2).contiguous(), y), {}


def tcn_noncausal_layernorm_classifier(shape=0):
    """A non-causal TCN with layer norm, GELU and a softmax output head (a per-step classifier),
    eval mode."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8], kernel_size=5, causal=False, use_norm="layer_norm", activation="gelu",
                kernel_initializer="xavier_normal", output_projection=4, output_activation="softmax").eval()
    return model, (_x(shape),), {}


def tcn_gated_global_embedding(shape=0):
    """Global conditioning: a 1-D embedding (a speaker / class vector) added in every block, with
    gated linear units, eval mode."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8, 8], kernel_size=3, embedding_shapes=[(5,)], use_gate=True).eval()
    gen = torch.Generator().manual_seed(50 + shape)
    emb = torch.randn(B[shape], 5, generator=gen)
    return model, (_x(shape),), {"embeddings": [emb]}


def tcn_local_embedding_concat_train_loss(shape=0):
    """Local conditioning: a 2-D embedding per time step concatenated and projected in every
    block (plus a global one), a training loss."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8], kernel_size=3, embedding_shapes=[(4, None), (2,)], embedding_mode="concat",
                use_norm=None, dropout=0.1).train()

    def loss_step(x, local, glob):
        out = model(x, embeddings=[local, glob])
        return out.pow(2).mean()

    gen = torch.Generator().manual_seed(60 + shape)
    local = torch.randn(B[shape], 4, L[shape], generator=gen)
    glob = torch.randn(B[shape], 2, generator=gen)
    return loss_step, (_x(shape), local, glob), {}


def tcn_streaming_inference(shape=0):
    """Streaming inference (`inference=True`): a causal TCN fed one block of a single series at a
    time, its padding buffers carrying the past between calls (eval mode, no_grad)."""
    from pytorch_tcn import TCN

    torch.manual_seed(0)
    model = TCN(IN, [8, 8, 8], kernel_size=3).eval()
    model.reset_buffers()

    def stream(block):
        with torch.no_grad():
            return model(block, inference=True)

    return stream, (_x(shape, batch=1, length=BLOCK[shape]),), {}


def temporal_conv_layers(shape=0):
    """The causal TemporalConv1d and TemporalConvTranspose1d layers as drop-in Conv1d
    replacements: a downsampling / upsampling encoder-decoder, eval mode."""
    from pytorch_tcn import TemporalConv1d, TemporalConvTranspose1d

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        TemporalConv1d(IN, 8, kernel_size=4, stride=2),
        torch.nn.ReLU(),
        TemporalConv1d(8, 8, kernel_size=3, dilation=2),
        torch.nn.ReLU(),
        TemporalConvTranspose1d(8, IN, kernel_size=4, stride=2),
    ).eval()
    return net, (_x(shape),), {}


def temporal_conv_streaming(shape=0):
    """TemporalConv1d and TemporalConvTranspose1d in streaming mode on blocks of one series."""
    from pytorch_tcn import TemporalConv1d, TemporalConvTranspose1d

    torch.manual_seed(0)
    conv = TemporalConv1d(IN, 8, kernel_size=4, stride=2).eval()
    deconv = TemporalConvTranspose1d(8, IN, kernel_size=4, stride=2).eval()

    def stream(block):
        with torch.no_grad():
            h = torch.relu(conv(block, inference=True))
            return deconv(h, inference=True)

    return stream, (_x(shape, batch=1, length=BLOCK[shape]),), {}


MODELS = {
    "tcn_forward": ("eval", tcn_forward),
    "tcn_skip_batchnorm_train_loss": ("train", tcn_skip_batchnorm_train_loss),
    "tcn_noncausal_layernorm_classifier": ("eval", tcn_noncausal_layernorm_classifier),
    "tcn_gated_global_embedding": ("eval", tcn_gated_global_embedding),
    "tcn_local_embedding_concat_train_loss": ("train", tcn_local_embedding_concat_train_loss),
    "tcn_streaming_inference": ("eval", tcn_streaming_inference),
    "tcn_temporal_conv_layers": ("eval", temporal_conv_layers),
    "tcn_temporal_conv_streaming": ("eval", temporal_conv_streaming),
}
