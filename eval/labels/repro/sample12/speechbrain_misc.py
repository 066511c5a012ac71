"""speechbrain: remaining findings (GlobalNorm counter, loss requires_grad, BEATs np.random, HifiGAN process_duration,
multi-mic Gev/GccPhat, undo_padding, RoPEMHA cross-attention, and copied snippets) under torch.compile (backend=eager)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sb  # noqa: F401
from _util import breaks
import numpy as np
import torch
torch.manual_seed(0)
from speechbrain.processing.features import GlobalNorm, STFT
from speechbrain.lobes.models.Tacotron2 import Loss as TacoLoss
from speechbrain.lobes.models.HifiGAN import process_duration
from speechbrain.processing.multi_mic import Covariance, Gev, GccPhat
from speechbrain.utils.data_utils import undo_padding
from speechbrain.nnet.attention import RoPEMHA

def sect(t): print("==", t)
sect("GlobalNorm defaults (update_steps=None), 4 calls")
g = GlobalNorm(); g.train(); breaks(g, None, calls=[(torch.randn(2, 10, 4), torch.ones(2))] * 4)
sect("GlobalNorm(update_steps=100), 4 calls")
g = GlobalNorm(update_steps=100); g.train(); breaks(g, None, calls=[(torch.randn(2, 10, 4), torch.ones(2))] * 4)

sect("Tacotron2 Loss (mel_target.requires_grad = False)")
tl = TacoLoss(guided_attention_sigma=0.2, gate_loss_weight=1.0, guided_attention_weight=1.0,
              guided_attention_scheduler=None, guided_attention_hard_stop=None)
B, M, T, L = 2, 8, 12, 7
mel_t = torch.randn(B, M, T); gate_t = torch.zeros(B, T)
preds = (torch.randn(B, M, T), torch.randn(B, M, T), torch.randn(B, T), torch.rand(B, T, L))
def taco(a, b, c, d, mt, gt): return tl((a, b, c, d), (mt, gt), torch.tensor([L, 5]), torch.tensor([T, 10]), 1)
breaks(taco, *preds, mel_t, gate_t)
sect("snippet: requires_grad = False on an input tensor")
def rg(x, t):
    t.requires_grad = False
    return (x - t).pow(2).mean()
breaks(rg, torch.randn(3, requires_grad=True), torch.randn(3))

sect("snippet: np.random.random() in a loop over layers (beats.py:821 pattern)")
lin = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(2)])
def bt(x):
    for layer in lin:
        p = np.random.random()
        if p > 0.0:
            x = layer(x)
    return x
breaks(bt, torch.randn(2, 4))

sect("HifiGAN process_duration")
code = torch.tensor([[1, 1, 2, 2, 2, 3, 4, 4]]); feat = torch.randn(1, 8, 3)
breaks(process_duration, code, feat)

sect("Gev (multi-mic)")
fs = 16000
xs = torch.randn(1, 4000, 4); ss = xs * 0.9; nn_ = xs * 0.1
stft = STFT(sample_rate=fs); cov = Covariance()
Xs = stft(xs); SSs = cov(stft(ss)); NNs = cov(stft(nn_))
breaks(Gev(), Xs, SSs, NNs)
sect("GccPhat defaults")
breaks(GccPhat(), cov(Xs))

sect("undo_padding")
breaks(undo_padding, torch.rand(4, 20), torch.tensor([0.5, 0.6, 0.7, 1.0]))

sect("RoPEMHA cross-attention (query is not key)")
mha = RoPEMHA(num_heads=2, embed_dim=8)
breaks(lambda q, k: mha(q, k, k), torch.randn(2, 6, 8), torch.randn(2, 6, 8))

sect("snippet: AddNoise._load_noise tail (time_domain.py:250-259)")
def load_tail(noise_batch, noise_len, lengths, max_length):
    max_chop = (noise_len - lengths).min().clamp(min=1)
    start_index = torch.randint(high=max_chop, size=(1,), device=lengths.device)
    noise_batch = noise_batch[:, start_index : start_index + max_length]
    noise_len = (noise_len - start_index).clamp(max=max_length).unsqueeze(1)
    return noise_batch, noise_len
breaks(load_tail, torch.randn(2, 200), torch.tensor([200, 180]), torch.tensor([100, 90]), 100)

sect("snippet: w2v_bert.py:175 list comprehension + HF feature extractor (numpy), batch 2,3,4,5")
def w2v(wav):
    B, _ = wav.shape
    wav_list = [wav[b].detach().cpu() for b in range(B)]
    arr = [w.numpy() for w in wav_list]  # stands in for the HF feature extractor (numpy)
    return torch.from_numpy(np.stack(arr)) * 2
breaks(w2v, None, calls=[(torch.randn(b, 50),) for b in (2, 3, 4, 5)])

sect("snippet: FastSpeech2 upsample loop (FastSpeech2.py:847-850), batch 2,3,4,5")
def ups(feats, durs):
    upsampled = [torch.repeat_interleave(feats[i], (1.0 * durs[i]).long(), dim=0) for i in range(len(durs))]
    return torch.nn.utils.rnn.pad_sequence(upsampled, batch_first=True)
breaks(ups, None, calls=[(torch.randn(b, 5, 3), torch.randint(1, 4, (b, 5))) for b in (2, 3, 4, 5)])

sect("snippet: Whisper reset_mem (seq2seq.py:582-585), batch 2,3,4,5")
initial_tokens = [50258, 50259, 50359, 50363]
def reset_mem(batch_size, device):
    no_speech_probs = [torch.nan] * batch_size
    memory_tokens = initial_tokens[:-1]
    mem = torch.tensor([memory_tokens] * batch_size).to(device)
    return mem, no_speech_probs
breaks(reset_mem, None, calls=[(b, "cpu") for b in (2, 3, 4, 5)])
