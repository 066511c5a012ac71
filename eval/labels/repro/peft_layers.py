"""peft tuner layers under torch.compile (eager backend) on tiny models: break sites for the normal
forward, for forward with disable_adapters on merged adapters (the only forward path that calls
unmerge()), LoKr in training mode, LoRA on nn.MultiheadAttention (recompiles over 3 calls),
P-tuning's LSTM prompt encoder and SHiRA's sparse delta."""
import sys
import _common
import torch
from torch import nn
import peft.import_utils
import peft.tuners.lora.torchao as _lt

# the installed torchao (0.14) makes peft's availability check raise; no torchao layer is used here
for _mod in list(sys.modules.values()):
    if getattr(_mod, "is_torchao_available", None) is not None and (_mod.__name__ or "").startswith("peft"):
        _mod.is_torchao_available = lambda: False
from peft import get_peft_model, LoraConfig, IA3Config, LoKrConfig

what = sys.argv[1:] or ["all"]


def want(k):
    return "all" in what or k in what


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(self.conv(x).mean((2, 3)))


x = torch.randn(1, 3, 6, 6)
if want("lora_conv"):
    m = get_peft_model(Conv(), LoraConfig(target_modules=["conv"], r=2, init_lora_weights=False))
    print("LoRA Conv2d normal forward"); _common.breaks(m, x)
    m.merge_adapter()
    with m.disable_adapter():
        print("LoRA Conv2d merged + disable_adapter forward"); _common.breaks(m, x)
if want("ia3_conv"):
    m = get_peft_model(Conv(), IA3Config(target_modules=["conv"], feedforward_modules=[]))
    print("IA3 Conv2d normal forward"); _common.breaks(m, x)
    m.merge_adapter()
    with m.disable_adapter():
        print("IA3 Conv2d merged + disable_adapter forward"); _common.breaks(m, x)
if want("lokr"):
    m = get_peft_model(Conv(), LoKrConfig(target_modules=["lin"], r=2, module_dropout=0.1))
    m.train()
    print("LoKr Linear training forward (module_dropout=0.1)"); _common.breaks(m, x)
    m.eval()
    print("LoKr Linear eval forward"); _common.breaks(m, x)
if want("mha"):
    class Att(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(4, 1, batch_first=True)

        def forward(self, q):
            return self.mha(q, q, q)[0]

    m = get_peft_model(Att(), LoraConfig(target_modules=["mha"], r=2))
    print("LoRA MultiheadAttention: 3 calls, same input shape")
    q = torch.randn(1, 3, 4)
    _common.recompiles(m, [(q,)] * 3)
if want("ptuning"):
    from peft.tuners.p_tuning.model import PromptEncoder
    from peft import PromptEncoderConfig
    cfg = PromptEncoderConfig(task_type="CAUSAL_LM", num_virtual_tokens=4, token_dim=8, encoder_hidden_size=8,
                              num_transformer_submodules=1, encoder_reparameterization_type="LSTM")
    pe = PromptEncoder(cfg)
    print("P-tuning PromptEncoder (LSTM)"); _common.breaks(pe, torch.arange(4)[None])
if want("shira"):
    from peft import ShiraConfig
    import peft.utils.quantization_utils as _qu
    _qu.is_torchao_available = lambda: False
    m = get_peft_model(Conv(), ShiraConfig(target_modules=["lin"], r=2))
    print("SHiRA Linear forward"); _common.breaks(m, x)
