"""speechbrain/processing/signal_processing.py:277 `kernel[..., rotation_index:]`: reverberate()
passes rotation_index=direct_index, the argmax tensor of `rir_waveform.abs().max(axis=1,
keepdim=True)` (line 357), so the slice bound is tensor data and breaks (GB0124) on 2.13.
Run: PYTHONPATH=. python eval/labels/repro/sample12/speechbrain_rotation_index.py"""
from tcl.oracle import probe_source

SRC = '''
import torch
def fn(rir, kernel):
    value_max, direct_index = rir.abs().max(axis=1, keepdim=True)
    after = kernel[..., direct_index:]
    return after.sum()
'''
result = probe_source(SRC, "fn", "(torch.randn(1, 10, 1), torch.randn(1, 1, 10))", modes=("default",))
print([(b.line, b.gb, b.reason[:60]) for b in result.breaks], result.exception)
# measured: [(5, 'GB0124', 'Unsupported Tensor.item() call with capture_scalar_outputs=F')] None
