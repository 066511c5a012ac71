"""TCL602 on transformers' Longformer, reproduced on the compiler (session 28).

`tcl check` reports modeling_longformer.py:985, `assert list(global_attn_scores.size()) == [...,
max_num_global_attn_indices, seq_len]`: a list comparison pairing a size that changes between
calls (the number of global tokens) with tensor data. This compiles a tiny LongformerModel
(backend "eager", CPU) and calls it with 1, 2 and 3 global tokens. Seen on torch 2.13.0+cpu with
transformers 5.24.0:

    1 ok True
    2 FAIL AssertionError Expected bool, got FakeTensor(..., size=(), dtype=torch.bool) at line 985
    3 FAIL AssertionError Expected bool, got FakeTensor(..., size=(), dtype=torch.bool) at line 985

Eager runs every call. Run with the corpus venv: `python eval/labels/repro/transformers_longformer_tcl602.py`.
"""
import os
import re
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import tv_stub  # noqa: E402  (torchvision on the CPU build of torch, as eval/worker.py does)

tv_stub.install()
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from transformers import LongformerConfig, LongformerModel  # noqa: E402

config = LongformerConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=32, attention_window=[4], max_position_embeddings=64)
torch.manual_seed(0)
model = LongformerModel(config).eval()
compiled = torch.compile(model, backend="eager")
for n_global in (1, 2, 3):
    ids = torch.randint(0, 100, (1, 16))
    global_mask = torch.zeros(1, 16, dtype=torch.long)
    global_mask[0, :n_global] = 1
    with torch.no_grad():
        eager = model(input_ids=ids, global_attention_mask=global_mask).last_hidden_state
        try:
            out = compiled(input_ids=ids, global_attention_mask=global_mask).last_hidden_state
            print(n_global, "ok", torch.allclose(eager, out, atol=1e-5))
        except Exception as exc:  # noqa: BLE001 -- the crash is what this shows
            text = str(exc)
            frames = re.findall(r"line (\d+), in \w+", text.split("from user code", 1)[-1])
            print(n_global, "FAIL", type(exc).__name__, text.splitlines()[0][:80],
                  f"at line {frames[-1]}" if frames else "")
