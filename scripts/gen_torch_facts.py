#!/usr/bin/env python
"""Generate tcl/torch_facts/torch-X.Y.json from the installed torch (it imports torch).

    python scripts/gen_torch_facts.py            # writes the file for the installed release
    python scripts/gen_torch_facts.py --check    # exit 1 if the checked-in file differs

What it records, all read from torch itself rather than written by hand:

* module_classes: every dotted name under torch.nn and torch.ao.nn at which an nn.Module
  subclass can be imported (`torch.nn.Linear`, `torch.nn.modules.loss._Loss`, ...), so that a
  user class deriving from any of them -- private bases included -- is analysed.
* other_classes: classes under those packages that are not modules (`torch.nn.Parameter`,
  `torch.nn.utils.rnn.PackedSequence`): constructing one gives no module.
* returns: for the functions of torch's public namespaces, whether they return tensors
  ("tensor") or only Python values ("python": bool, int, float, str, dtype, device, None, ...),
  from the return annotations of Python functions and the type stubs (.pyi) of C functions.
  A function whose annotation is missing, `Any`, or mixes both is left out: tcl then decides
  as it did without the data.
* tensor_attributes / python_attributes: the public attributes a torch.Tensor has and list,
  dict, str, set, tuple, int, float and an Enum member (`name`, `value`) lack, and the other
  way round: how a parameter is used is evidence of what it holds (tcl/evidence.py).
* tensor_methods: the tensor_attributes that are methods (`dim`, `size`, `view`), not data
  (`shape`, `dtype`, `T`): only a call is evidence of a tensor, since `args.dim` or
  `config.size` read a field of the same name.
* shared_attributes: the tensor attributes that a numpy.ndarray, an nn.Module or a path has too
  (`shape`, `sum`, `to`, `half`, `name`): no evidence that a value is a tensor, where nothing
  else says it is compiled (tcl/api_entries.py).
* tensor_input_calls: the functions of torch and torch.nn.functional whose first parameter is a
  tensor by name (`input`, `tensor`, `input1`, `x1`, `A`: `torch.isnan(input)`, `F.relu(input)`;
  not `torch.zeros(*size)` nor `torch.tensor(data)`), read from their signatures or, for C
  functions, the signature line of their docstrings: a value passed there is a tensor.
* skipped_calls: which of the calls in CALL_PROBES (standard-library and torch calls model code
  makes) break the graph when compiled, with the GB id the compiler gives, measured by
  compiling each in default mode on this torch (torch._dynamo.error_on_graph_break). The list
  of candidates is written here; whether each breaks is the compiler's answer, per release.
* size_specialising_calls: which of the calls in SIZE_PROBES, given a tensor whose sizes change
  between calls (or sizes taken from it), make the frame recompile on every new size even
  after automatic dynamic shapes made the size symbolic (`Tensor.fill_diagonal_`,
  `torch.triu_indices(n, n)`): each probe is compiled and called with four sizes and its
  compilations counted per call (tcl.verify.compile_trace); "receiver" or "size arguments"
  says which input carries the size.
* data_reading_calls: which of the calls in DATA_READ_PROBES, given a tensor, reduce its data
  to a Python bool or number and break the graph (`torch.allclose`, `torch.equal`,
  `math.isclose` of a tensor), with the GB id, compiled in default mode.
* dynamic_shape_calls: the public torch.* / Tensor.* names of the aten ops torch tags
  `dynamic_output_shape` (`torch.bincount`, `Tensor.nonzero`), each compiled in default mode
  with its DYNAMIC_SHAPE_PROBES call and kept with its GB id where it breaks.
* deprecated_signature_calls: the Tensor methods whose deprecated scalar-first signatures
  (`p.add_(-lr, grad)`, `v.addcmul_(1 - beta, g, g)`, read from the `|deprecated` signatures
  in torch's own libtorch_python binary) break the graph, each form compiled in default mode:
  {"Tensor.add_": {"signatures": ["Scalar alpha, Tensor other"], "gb": "GB0117"}}.
* breaking_tensor_methods: which of the Tensor methods in TENSOR_METHOD_PROBES that return a
  Python value break the graph when compiled, with the GB id (`x.is_pinned()`,
  `x.storage_offset()`, `x.is_signed()`: GB0208 on 2.13; `x.dim()`, `x.numel()` trace).
* optimizer_steps: the torch.optim optimizers whose `step()` breaks the graph of a compiled
  training step, with the GB id (torch's `_use_grad_for_differentiable` wrapper calls
  torch._dynamo.graph_break() around the update on 2.13: GB0025); an Optimizer subclass whose
  own step has no such wrapper traces.
* optimizer_calls: which OPTIMIZER_PROBES (optimizer and LR-scheduler methods a compiled training
  step calls) break, with the GB id: `optimizer.zero_grad()` and `scheduler.step()` are functions
  Dynamo skips on 2.13 (GB0008); nn.Module.zero_grad traces.
* skipped_modules: the third-party packages Dynamo's own trace rules skip whole
  (torch._dynamo.trace_rules.THIRDPARTY_SKIPLIST: tqdm, pandas, sklearn, networkx, ...):
  calling into them from compiled code breaks the graph (GB0007/GB0008). numpy is left out:
  Dynamo traces NumPy calls through torch._numpy instead.
* gb_settings: GB id -> the torch._dynamo.config switches the graph-break registry's own hints
  for that id name (`Set torch._dynamo.config.capture_scalar_outputs = True` under GB0124),
  read from the graph_break_registry.json the release ships, names the release's config lacks
  left out. `tcl fix --verify` tries them where a file's examples break with that id.
* numpy_random: for the np.random functions in NUMPY_RANDOM_PROBES, whether a draw of one value
  (no size) and a draw of an array (a size given) break the graph, with the GB id, measured by
  compiling each in default mode: Dynamo traces NumPy arrays through torch, so on 2.13 an array
  draw stays in the graph and only the Python scalar of a one-value draw breaks it. `size_at`
  is the position of the size argument (-1: every positional argument is a dimension, as in
  `np.random.rand(3, 2)`).
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib
import inspect
import json
import logging
import pkgutil
import re
import sys
import warnings
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "tcl" / "torch_facts"
MODULE_PACKAGES = ("torch.nn", "torch.ao.nn")
# Namespaces whose functions user code calls inside compiled regions.
FUNCTION_NAMESPACES = (
    "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.cuda",
    "torch.xpu", "torch.mps", "torch.cpu", "torch.backends.cuda", "torch.backends.cudnn",
    "torch.backends.mps", "torch.backends.mkldnn", "torch.onnx", "torch.jit", "torch.compiler",
    "torch.distributed", "torch.autograd", "torch.autograd.grad_mode", "torch.amp",
    "torch.random", "torch.overrides", "torch.testing", "torch.nn.init", "torch.nn.utils",
    "torch.utils.checkpoint", "torch.fx", "torch.export", "torch.accelerator", "torch.sparse",
    "torch.nested", "torch.masked", "torch.signal.windows",
)
PYTHON_TYPES = {
    "bool", "_bool", "int", "_int", "float", "_float", "str", "None", "NoneType", "dtype",
    "_dtype", "torch.dtype", "device", "_device", "torch.device", "Size", "torch.Size",
    "complex", "_complex", "bytes", "layout", "_layout", "memory_format", "_qscheme",
    "qscheme", "SymInt", "SymFloat", "SymBool", "Number", "_size", "Sequence[int]",
    "List[int]", "list[int]", "tuple[int, ...]", "Tuple[int, ...]", "builtins.bool",
    "builtins.int", "builtins.float", "builtins.str", "typing.NoReturn", "NoReturn",
}


def _classify(annotations: set[str]) -> str | None:
    """'tensor', 'python', or None (unknown or mixed) for a function's return annotations."""
    if not annotations:
        return None
    kinds = set()
    for text in annotations:
        text = text.strip().strip("'\"")
        if re.fullmatch(r"(typing\.|typing_extensions\.)?(TypeIs|TypeGuard)\[.*\]", text):
            kinds.add("python")  # a type predicate returns a bool
        elif "Tensor" in text or "Parameter" in text:
            kinds.add("tensor")
        elif text in PYTHON_TYPES or re.fullmatch(r"(Optional|Union)\[[^\[\]]*\]|[A-Za-z_.]+ \| None", text) and not (
            set(re.split(r"[\[\], |]+", text)) - PYTHON_TYPES - {"Optional", "Union", ""}
        ):
            kinds.add("python")
        else:
            return None  # Any, object, a class, a callable: not decided here
    return kinds.pop() if len(kinds) == 1 else None


# qualname (as tcl names it: builtins are `builtins.X`) -> the call's text in a probe, where
# `x` is a tensor argument. Only calls that are safe to run (the probe runs them).
CALL_PROBES = {
    "time.time": "time.time()", "time.perf_counter": "time.perf_counter()",
    "time.monotonic": "time.monotonic()", "time.process_time": "time.process_time()",
    "time.time_ns": "time.time_ns()", "time.perf_counter_ns": "time.perf_counter_ns()",
    "time.sleep": "time.sleep(0)", "time.strftime": "time.strftime('%Y')",
    "inspect.currentframe": "inspect.currentframe()", "inspect.stack": "inspect.stack()",
    # Of a Python function, as model code asks (`inspect.signature(forward_fn)`): a builtin's
    # signature breaks (GB0175) where a Python function's is traced.
    "inspect.signature": "inspect.signature(_python_function)", "inspect.getsource": "inspect.getsource(json.dumps)",
    "inspect.isfunction": "inspect.isfunction(_python_function)", "sys._getframe": "sys._getframe()",
    "sys.getrecursionlimit": "sys.getrecursionlimit()",
    "gc.collect": "gc.collect()", "gc.isenabled": "gc.isenabled()", "gc.get_count": "gc.get_count()",
    "importlib.import_module": "importlib.import_module('math')",
    "importlib.invalidate_caches": "importlib.invalidate_caches()",
    "builtins.__import__": "__import__('math')",
    "random.random": "random.random()", "random.seed": "random.seed(0)",
    "random.randrange": "random.randrange(10)", "random.randint": "random.randint(0, 3)",
    "random.choice": "random.choice([1, 2])", "random.choices": "random.choices([1, 2], k=2)",
    "random.uniform": "random.uniform(0, 1)", "random.gauss": "random.gauss(0, 1)",
    "random.normalvariate": "random.normalvariate(0, 1)", "random.shuffle": "random.shuffle([1, 2, 3])",
    "random.sample": "random.sample([1, 2, 3], 2)", "random.getrandbits": "random.getrandbits(8)",
    "random.getstate": "random.getstate()", "random.betavariate": "random.betavariate(1, 1)",
    "uuid.uuid4": "uuid.uuid4()", "copy.copy": "copy.copy([1, 2])", "copy.deepcopy": "copy.deepcopy([1, 2])",
    "linecache.getline": "linecache.getline(__file__, 1)",
    "re.compile": "re.compile('a+')", "re.match": "re.match('a', 'abc')", "re.search": "re.search('a', 'abc')",
    "re.sub": "re.sub('a', 'b', 'abc')", "re.split": "re.split(',', 'a,b')",
    "re.findall": "re.findall('a', 'aba')", "re.fullmatch": "re.fullmatch('a', 'a')",
    "os.getpid": "os.getpid()", "os.environ.get": "os.environ.get('HOME')", "os.getenv": "os.getenv('HOME')",
    "socket.gethostname": "socket.gethostname()", "platform.system": "platform.system()",
    "torch.manual_seed": "torch.manual_seed(0)", "torch.seed": "torch.seed()",
    "torch.initial_seed": "torch.initial_seed()",
    "torch.cuda.manual_seed": "torch.cuda.manual_seed(0)", "torch.cuda.manual_seed_all": "torch.cuda.manual_seed_all(0)",
    "torch.get_rng_state": "torch.get_rng_state()", "torch.random.fork_rng": "torch.random.fork_rng()",
    "torch.jit.isinstance": "torch.jit.isinstance(x, torch.Tensor)",
    "torch._C._get_tracing_state": "torch._C._get_tracing_state()",
    "torch.cuda.is_available": "torch.cuda.is_available()", "torch.cuda.device_count": "torch.cuda.device_count()",
    "torch.onnx.is_in_onnx_export": "torch.onnx.is_in_onnx_export()",
    "torch.xpu.is_available": "torch.xpu.is_available()", "torch.jit.is_scripting": "torch.jit.is_scripting()",
    "torch.jit.is_tracing": "torch.jit.is_tracing()",
    "torch.distributed.is_available": "torch.distributed.is_available()",
    "torch.distributed.is_initialized": "torch.distributed.is_initialized()",
    "torch.are_deterministic_algorithms_enabled": "torch.are_deterministic_algorithms_enabled()",
    "torch.get_num_threads": "torch.get_num_threads()",
    # Threads, clocks, files, hashing and the like, as library code calls them on its way
    # (demucs' `lock = Lock()` in apply_model, a cache keyed by a hash, a path test).
    "threading.Lock": "threading.Lock()", "threading.RLock": "threading.RLock()",
    "threading.Event": "threading.Event()", "threading.local": "threading.local()",
    "threading.current_thread": "threading.current_thread()", "threading.get_ident": "threading.get_ident()",
    "queue.Queue": "queue.Queue()", "concurrent.futures.ThreadPoolExecutor": "concurrent.futures.ThreadPoolExecutor(1)",
    "multiprocessing.cpu_count": "multiprocessing.cpu_count()", "os.cpu_count": "os.cpu_count()",
    "datetime.datetime.now": "datetime.datetime.now()", "datetime.datetime.utcnow": "datetime.datetime.utcnow()",
    "time.localtime": "time.localtime()", "time.gmtime": "time.gmtime()", "time.ctime": "time.ctime()",
    "os.path.exists": "os.path.exists(__file__)", "os.path.isfile": "os.path.isfile(__file__)",
    "os.path.isdir": "os.path.isdir(__file__)", "os.path.join": "os.path.join('a', 'b')",
    "os.getcwd": "os.getcwd()", "os.listdir": "os.listdir('.')", "os.urandom": "os.urandom(4)",
    "glob.glob": "glob.glob('*.py')", "shutil.which": "shutil.which('python')",
    "tempfile.gettempdir": "tempfile.gettempdir()", "pathlib.Path": "pathlib.Path('a')",
    "getpass.getuser": "getpass.getuser()", "locale.getpreferredencoding": "locale.getpreferredencoding()",
    "platform.python_version": "platform.python_version()", "platform.machine": "platform.machine()",
    "json.dumps": "json.dumps({'a': 1})", "json.loads": "json.loads('[1]')", "pickle.dumps": "pickle.dumps([1])",
    "hashlib.md5": "hashlib.md5(b'a')", "hashlib.sha256": "hashlib.sha256(b'a')",
    # Session 18: more of what model code calls (paths, records, interpreter state, streams).
    "os.path.abspath": "os.path.abspath('a')", "os.path.basename": "os.path.basename('/a/b')",
    "dataclasses.fields": "dataclasses.fields(_Record())", "dataclasses.asdict": "dataclasses.asdict(_Record())",
    "typing.get_type_hints": "typing.get_type_hints(_Record)", "ctypes.sizeof": "ctypes.sizeof(ctypes.c_int)",
    "signal.getsignal": "signal.getsignal(signal.SIGINT)", "sys.getdefaultencoding": "sys.getdefaultencoding()",
    "sys.stdout.write": "sys.stdout.write('')", "sys.stdout.flush": "sys.stdout.flush()",
    "sys.stderr.write": "sys.stderr.write('')", "sys.stderr.flush": "sys.stderr.flush()",
    "warnings.simplefilter": "warnings.simplefilter('default')",
    "torch.get_default_device": "torch.get_default_device()", "torch.backends.cuda.is_built": "torch.backends.cuda.is_built()",
    "torch.use_deterministic_algorithms": "torch.use_deterministic_algorithms(False)",
    "torch.is_autocast_enabled": "torch.is_autocast_enabled()",
    # Session 39: packing for RNNs, as recurrent agents and speech models call it (pfrl's
    # `nn.utils.rnn.pack_sequence(seqs)` broke a compiled DRQN step on dev3); pad_sequence is
    # probed as the one that traces.
    "torch.nn.utils.rnn.pack_sequence": "torch.nn.utils.rnn.pack_sequence([x, x[:2]])",
    "torch.nn.utils.rnn.pack_padded_sequence":
        "torch.nn.utils.rnn.pack_padded_sequence(x.view(1, 3, 1), torch.tensor([3]), batch_first=True)",
    "torch.nn.utils.rnn.pad_packed_sequence":
        "torch.nn.utils.rnn.pad_packed_sequence(torch.nn.utils.rnn.pack_sequence([x, x[:2]]))",
    "torch.nn.utils.rnn.pad_sequence": "torch.nn.utils.rnn.pad_sequence([x, x[:2]])",
    "zlib.crc32": "zlib.crc32(b'a')", "base64.b64encode": "base64.b64encode(b'a')",
    "struct.pack": "struct.pack('i', 1)", "secrets.token_hex": "secrets.token_hex(4)",
    "traceback.format_stack": "traceback.format_stack()", "traceback.extract_stack": "traceback.extract_stack()",
    "sys.getsizeof": "sys.getsizeof([1])", "sys.getrefcount": "sys.getrefcount(x)",
    "inspect.getfile": "inspect.getfile(_python_function)", "inspect.getmodule": "inspect.getmodule(_python_function)",
    "inspect.getfullargspec": "inspect.getfullargspec(_python_function)",
    "statistics.mean": "statistics.mean([1, 2])", "bisect.bisect": "bisect.bisect([1, 3], 2)",
    "heapq.heappush": "heapq.heappush([], 1)", "decimal.Decimal": "decimal.Decimal(1)",
    "fractions.Fraction": "fractions.Fraction(1, 2)", "array.array": "array.array('i', [1])",
    "io.StringIO": "io.StringIO()", "io.BytesIO": "io.BytesIO()",
    "builtins.globals": "globals()", "builtins.dir": "dir(x)",
    "torch.get_num_interop_threads": "torch.get_num_interop_threads()",
    "torch.backends.cudnn.is_available": "torch.backends.cudnn.is_available()",
    "torch.backends.mps.is_available": "torch.backends.mps.is_available()",
    "torch.cuda.is_bf16_supported": "torch.cuda.is_bf16_supported()",
    "torch.cuda.memory_allocated": "torch.cuda.memory_allocated()",
    "torch.cuda.get_device_name": "torch.cuda.get_device_name()",
    "torch.distributed.get_rank": "torch.distributed.get_rank()",
    "torch.utils.data.get_worker_info": "torch.utils.data.get_worker_info()", "torch.hub.get_dir": "torch.hub.get_dir()",
}
# Calls given a (n, n) float tensor `x` whose n changes, and `n = x.shape[0]`. The value says
# which input carries the changing size: the tensor the method is called on, or the ints.
SIZE_PROBES = {
    "Tensor.fill_diagonal_": ("x.clone().fill_diagonal_(0)", "receiver"),
    "Tensor.diagonal": ("x.diagonal()", "receiver"), "torch.diag": ("torch.diag(x)", "receiver"),
    "torch.diag_embed": ("torch.diag_embed(x)", "receiver"), "torch.tril": ("torch.tril(x)", "receiver"),
    "torch.triu": ("torch.triu(x, 1)", "receiver"), "Tensor.roll": ("x.roll(1, 0)", "receiver"),
    "Tensor.unfold": ("x.unfold(0, 2, 1)", "receiver"), "Tensor.chunk": ("x.chunk(2)[0]", "receiver"),
    "Tensor.tensor_split": ("x.tensor_split(2)[0]", "receiver"), "Tensor.split": ("x.split(2)[0]", "receiver"),
    # One tensor per row of dim 0 (RNN code over time steps): their number is the size.
    "Tensor.unbind": ("x.unbind(0)[0]", "receiver"), "torch.unbind": ("torch.unbind(x, 0)[0]", "receiver"),
    "Tensor.sort": ("x.sort(0).values", "receiver"), "Tensor.argsort": ("x.argsort(0)", "receiver"),
    "Tensor.cumsum": ("x.cumsum(0)", "receiver"), "torch.cdist": ("torch.cdist(x, x)", "receiver"),
    "torch.block_diag": ("torch.block_diag(x, x)", "receiver"), "Tensor.flip": ("x.flip(0)", "receiver"),
    "Tensor.repeat_interleave": ("x.repeat_interleave(2, dim=0)", "receiver"),
    "torch.combinations": ("torch.combinations(x[0])", "receiver"),
    "torch.cartesian_prod": ("torch.cartesian_prod(x[0], x[0])", "receiver"),
    # Spectral, pooling, linear-algebra and other calls library models make (demucs' istft
    # with `length=`, a resampler's rfft with `n=`).
    "torch.stft": ("torch.stft(x.reshape(-1), 8, window=torch.ones(8), return_complex=True).abs()", "receiver"),
    "torch.istft": ("torch.istft(torch.stft(x.reshape(-1), 8, window=torch.ones(8), return_complex=True), 8, "
                    "window=torch.ones(8), length=n * n)", "size arguments"),
    "torch.fft.rfft": ("torch.fft.rfft(x, n=2 * n, dim=0).abs()", "size arguments"),
    "torch.fft.irfft": ("torch.fft.irfft(torch.fft.rfft(x, dim=0), n=n, dim=0)", "size arguments"),
    "torch.kron": ("torch.kron(x, x)", "receiver"), "torch.einsum": ("torch.einsum('ij,jk->ik', x, x)", "receiver"),
    "torch.linalg.solve": ("torch.linalg.solve(x @ x.T + n * torch.eye(n), x)", "receiver"),
    "torch.linalg.cholesky": ("torch.linalg.cholesky(x @ x.T + n * torch.eye(n))", "receiver"),
    "torch.linalg.inv": ("torch.linalg.inv(x @ x.T + n * torch.eye(n))", "receiver"),
    "torch.linalg.eigh": ("torch.linalg.eigh(x @ x.T).eigenvalues", "receiver"),
    "torch.linalg.qr": ("torch.linalg.qr(x).Q", "receiver"), "torch.linalg.svd": ("torch.linalg.svd(x).S", "receiver"),
    "torch.det": ("torch.det(x)", "receiver"), "torch.searchsorted": ("torch.searchsorted(x[0].sort().values, x[1])", "receiver"),
    "torch.histc": ("torch.histc(x, bins=n)", "size arguments"),
    "torch.randint": ("torch.randint(0, n, (3,))", "size arguments"),
    "Tensor.repeat": ("x.repeat(n, 1)", "size arguments"), "Tensor.new_ones": ("x.new_ones(n)", "size arguments"),
    "Tensor.unflatten": ("x.reshape(-1).unflatten(0, (n, n))", "size arguments"),
    "torch.nn.functional.adaptive_avg_pool1d": ("torch.nn.functional.adaptive_avg_pool1d(x[None], n // 2)", "size arguments"),
    "torch.nn.functional.avg_pool1d": ("torch.nn.functional.avg_pool1d(x[None], n // 2)", "size arguments"),
    "torch.nn.functional.max_pool1d": ("torch.nn.functional.max_pool1d(x[None], n // 2)", "size arguments"),
    "torch.nn.functional.unfold": ("torch.nn.functional.unfold(x[None, None], kernel_size=2)", "receiver"),
    "torch.nn.functional.conv1d": ("torch.nn.functional.conv1d(x[None], x[None, :, :2])", "receiver"),
    "torch.fft.fft": ("torch.fft.fft(x, dim=0)", "receiver"), "Tensor.t": ("x.t()", "receiver"),
    "Tensor.take_along_dim": ("x.take_along_dim(x.argmax(1).view(-1, 1), dim=1)", "receiver"),
    "Tensor.gather": ("x.gather(1, x.argmax(1).view(-1, 1))", "receiver"),
    "Tensor.index_select": ("x.index_select(0, x.argmax(1))", "receiver"),
    "Tensor.masked_select": ("x.masked_select(x > 0)", "receiver"),
    "Tensor.scatter_add": ("x.scatter_add(1, x.argmax(1).view(-1, 1), x[:, :1])", "receiver"),
    "Tensor.index_add": ("x.index_add(0, x.argmax(1), x)", "receiver"),
    "torch.triu_indices": ("torch.triu_indices(n, n, 1)", "size arguments"),
    "torch.tril_indices": ("torch.tril_indices(n, n, -1)", "size arguments"),
    "torch.eye": ("torch.eye(n)", "size arguments"), "torch.arange": ("torch.arange(n)", "size arguments"),
    "torch.linspace": ("torch.linspace(0, 1, n)", "size arguments"),
    "torch.randperm": ("torch.randperm(n)", "size arguments"),
    "torch.zeros": ("torch.zeros(n, n)", "size arguments"), "torch.ones": ("torch.ones(n)", "size arguments"),
    "torch.full": ("torch.full((n,), 2.0)", "size arguments"), "torch.empty": ("torch.empty(n)", "size arguments"),
    "torch.randn": ("torch.randn(n)", "size arguments"), "torch.rand": ("torch.rand(n)", "size arguments"),
    "torch.hann_window": ("torch.hann_window(n)", "size arguments"),
    "torch.nn.functional.one_hot": ("torch.nn.functional.one_hot(torch.arange(3), n)", "size arguments"),
    "torch.bincount": ("torch.bincount(torch.arange(3), minlength=n)", "size arguments"),
    "torch.nn.functional.interpolate": ("torch.nn.functional.interpolate(x[None, None], size=(n, n))", "size arguments"),
    "torch.nn.functional.pad": ("torch.nn.functional.pad(x, (0, n))", "size arguments"),
    "Tensor.narrow": ("x.narrow(0, 1, n - 1)", "size arguments"), "Tensor.view": ("x.view(n * n)", "size arguments"),
    "Tensor.expand": ("x[:1].expand(n, n)", "size arguments"), "Tensor.new_zeros": ("x.new_zeros(n)", "size arguments"),
    "Tensor.topk": ("x.topk(n // 2, dim=0).values", "size arguments"),
    "Tensor.multinomial": ("x.softmax(1).multinomial(n // 2)", "size arguments"),
    # Python's math on an int that changes (a size, or a step counter once automatic dynamic
    # shapes made it symbolic): some functions Dynamo evaluates symbolically, others not.
    **{f"math.{name}": (f"x * math.{name}({args})", "size arguments") for name, args in (
        ("pow", "n, 0.5"), ("log", "n"), ("exp", "-n"), ("sqrt", "n"), ("log2", "n"), ("log10", "n"),
        ("log1p", "n"), ("expm1", "-n"), ("cos", "n"), ("sin", "n"), ("tanh", "n"), ("atan", "n"),
        ("ceil", "n / 3"), ("floor", "n / 3"), ("isqrt", "n"), ("gcd", "n, 4"), ("hypot", "n, 3"),
        ("factorial", "n // 4"), ("comb", "n, 2"), ("trunc", "n / 3"), ("fabs", "-n"))},
    # NumPy on a size (`scale = 1 / np.sqrt(seq_len)`, `np.prod(x.shape)`): Dynamo traces it
    # through torch._numpy, which turns the int into a tensor and so needs its value.
    **{f"numpy.{name}": (f"x * float({call})", "size arguments") for name, call in (
        ("sqrt", "np.sqrt(n)"), ("log", "np.log(n)"), ("log2", "np.log2(n)"), ("log10", "np.log10(n)"),
        ("exp", "np.exp(-n)"), ("power", "np.power(n, 0.5)"), ("ceil", "np.ceil(n / 3)"),
        ("floor", "np.floor(n / 3)"), ("round", "np.round(n / 3)"), ("abs", "np.abs(-n)"),
        ("maximum", "np.maximum(n, 2)"), ("minimum", "np.minimum(n, 100)"), ("prod", "np.prod((n, 2))"),
        ("sum", "np.sum((n, 2))"), ("arange", "np.arange(n).sum()"), ("zeros", "np.zeros(n).sum()"))},
}
# Tensor methods that return Python values about the tensor (x is a (3,) float tensor): which
# break the graph, with the GB id (`x.is_pinned()`, `x.storage_offset()`: GB0208 on 2.13).
TENSOR_METHOD_PROBES = {
    name: f"x.{call}" for name, call in (
        ("is_pinned", "is_pinned()"), ("storage_offset", "storage_offset()"), ("is_shared", "is_shared()"),
        ("is_signed", "is_signed()"), ("is_neg", "is_neg()"), ("is_conj", "is_conj()"),
        ("is_set_to", "is_set_to(x)"), ("storage", "storage()"), ("untyped_storage", "untyped_storage()"),
        ("data_ptr", "data_ptr()"), ("element_size", "element_size()"), ("get_device", "get_device()"),
        ("is_contiguous", "is_contiguous()"), ("is_floating_point", "is_floating_point()"),
        ("is_complex", "is_complex()"), ("nelement", "nelement()"), ("stride", "stride()"),
        ("has_names", "has_names()"), ("dim", "dim()"), ("numel", "numel()"))
}
# Optimizer and LR-scheduler methods called inside compiled code (a compiled training step),
# on an SGD optimizer with gradients and a StepLR scheduler: which break, with the GB id.
# Optimizer.step is left out on purpose: its break is inside torch's profiling wrapper and the
# step body then compiles as its own frame (PyTorch's own recipe for compiling the optimizer).
OPTIMIZER_PROBE_SETUP = (
    "import torch\n_lin = torch.nn.Linear(3, 1)\nfor _p in _lin.parameters():\n    _p.grad = torch.ones_like(_p)\n"
    "_opt = torch.optim.SGD(_lin.parameters(), lr=0.1)\n_sched = torch.optim.lr_scheduler.StepLR(_opt, 2)\n")
OPTIMIZER_PROBES = {
    "Optimizer.zero_grad": "_opt.zero_grad()", "Optimizer.state_dict": "_opt.state_dict()",
    "Optimizer.add_param_group": "_opt.add_param_group({'params': [torch.nn.Parameter(torch.ones(1))]})",
    "LRScheduler.step": "_sched.step()", "LRScheduler.get_last_lr": "_sched.get_last_lr()",
    "Module.zero_grad": "_lin.zero_grad()",
}
# Calls that reduce tensor data to a Python bool or number (`torch.allclose(a, b)` in a check,
# `torch.equal(mask, ref)`), given the (3,) float input `x`: whether each breaks, with the GB id.
DATA_READ_PROBES = {
    "torch.equal": "torch.equal(x, x * 2)", "torch.allclose": "torch.allclose(x, x * 2)",
    "torch.is_nonzero": "torch.is_nonzero(x.sum())", "torch.is_same_size": "torch.is_same_size(x, x)",
    "Tensor.equal": "x.equal(x * 2)", "Tensor.allclose": "x.allclose(x * 2)",
    "Tensor.is_nonzero": "x.sum().is_nonzero()",
    "math.isclose": "math.isclose(x.sum(), 2.0)", "math.isnan": "math.isnan(x.sum())",
    "math.isinf": "math.isinf(x.sum())", "math.isfinite": "math.isfinite(x.sum())",
    "math.floor": "math.floor(x.sum())", "math.ceil": "math.ceil(x.sum())",
    "math.sqrt": "math.sqrt(x.sum().abs())", "math.exp": "math.exp(x.sum())",
    "math.log": "math.log(x.sum().abs() + 1)", "builtins.round": "round(x.sum())",
}
# Calls whose output shape depends on the values of their input, given the (3,) float input `x`
# (`torch.bincount(labels)`, `idx = mask.nonzero()`): the candidates are the public names of the
# aten ops torch tags `dynamic_output_shape` (plus argwhere, which is nonzero underneath); each is
# compiled in default mode and kept with its GB id where it breaks. Tagged ops that other rules
# handle with their own conditions are left out on purpose: repeat_interleave (only with tensor
# repeats), one_hot (only without num_classes), index (boolean-mask indexing).
DYNAMIC_SHAPE_PROBES = {
    "torch.nonzero": "torch.nonzero(x > 0).float().sum()", "Tensor.nonzero": "(x > 0).nonzero().float().sum()",
    "torch.argwhere": "torch.argwhere(x > 0).float().sum()", "Tensor.argwhere": "(x > 0).argwhere().float().sum()",
    "torch.unique": "torch.unique(x.round()).sum()", "Tensor.unique": "x.round().unique().sum()",
    "torch.unique_consecutive": "torch.unique_consecutive(x.round()).sum()",
    "Tensor.unique_consecutive": "x.round().unique_consecutive().sum()",
    "torch.masked_select": "torch.masked_select(x, x > 0).sum()", "Tensor.masked_select": "x.masked_select(x > 0).sum()",
    "torch.bincount": "torch.bincount((x > 0).long()).sum()", "Tensor.bincount": "(x > 0).long().bincount().sum()",
}
DYNAMIC_SHAPE_HANDLED_ELSEWHERE = frozenset({"repeat_interleave", "one_hot", "index"})
# In-place view ops (a new view written into the tensor object itself): aten tags some
# `inplace_view`; detach_, squeeze_ and the swap aliases are composite and carry no tag, so they
# are probed by name. Each call runs on the compiled frame's own input `x` (a graph input: a
# parameter of the frame, a module's buffer or parameter). resize_/resize_as_ are TCL406's (they
# break on any tensor); set_ swaps storage and is not probed.
INPLACE_VIEW_PROBES = {
    "as_strided_": "x.as_strided_((3,), (1,))", "t_": "x.t_()", "transpose_": "x.transpose_(0, 0)",
    "unsqueeze_": "x.unsqueeze_(0)", "squeeze_": "x.squeeze_()", "detach_": "x.detach_()",
    "swapdims_": "x.swapdims_(0, 0)", "swapaxes_": "x.swapaxes_(0, 0)",
}
INPLACE_VIEW_HANDLED_ELSEWHERE = frozenset({"resize_", "resize_as_", "set_"})
# np.random function -> (a one-value draw, an array draw, position of the size argument; -1: the
# positional arguments are the dimensions). Functions with no one-value form give None.
NUMPY_RANDOM_PROBES = {
    "rand": ("np.random.rand()", "np.random.rand(3)", -1),
    "randn": ("np.random.randn()", "np.random.randn(3)", -1),
    "random": ("np.random.random()", "np.random.random(3)", 0),
    "random_sample": ("np.random.random_sample()", "np.random.random_sample(3)", 0),
    "uniform": ("np.random.uniform(0.0, 1.0)", "np.random.uniform(0.0, 1.0, 3)", 2),
    "normal": ("np.random.normal(0.0, 1.0)", "np.random.normal(0.0, 1.0, 3)", 2),
    "standard_normal": ("np.random.standard_normal()", "np.random.standard_normal(3)", 0),
    "randint": ("np.random.randint(1, 5)", "np.random.randint(1, 5, 3)", 2),
    "choice": ("np.random.choice([1.0, 2.0])", "np.random.choice([1.0, 2.0], 3)", 1),
    "beta": ("np.random.beta(2.0, 2.0)", "np.random.beta(2.0, 2.0, 3)", 2),
    "exponential": ("np.random.exponential(1.0)", "np.random.exponential(1.0, 3)", 1),
    "poisson": ("np.random.poisson(2.0)", "np.random.poisson(2.0, 3)", 1),
    "binomial": ("np.random.binomial(4, 0.5)", "np.random.binomial(4, 0.5, 3)", 2),
    "permutation": (None, "np.random.permutation(3)", 0),
    "seed": ("np.random.seed(0)", None, 0),
}
PROBE_IMPORTS = (
    "import copy, gc, importlib, inspect, linecache, os, platform, random, re, socket, sys, time, uuid\n"
    "import array, base64, bisect, concurrent.futures, datetime, decimal, fractions, getpass, glob, hashlib\n"
    "import heapq, io, json, locale, multiprocessing, os.path, pathlib, pickle, queue, secrets, shutil\n"
    "import statistics, struct, tempfile, threading, traceback, zlib\n"
    "import ctypes, dataclasses, signal, typing, warnings\n"
    "import torch\n"
    "def _python_function(a, b=1):\n    return a\n"
    "@dataclasses.dataclass\nclass _Record:\n    a: int = 1\n"
)


def _break_of(source: str) -> str | None:
    """The GB id of the break `fn(torch.randn(3))` of `source` hits, compiled in default mode
    with breaks made errors; None when it compiles whole, "error" for another failure, also
    when the call fails eagerly (`torch.distributed.get_rank()` without a process group, a CUDA
    query on a machine without one): what it does under compile says nothing then."""
    import torch

    namespace: dict = {"__file__": __file__}
    exec(compile(source, "<probe>", "exec"), namespace)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            namespace["fn"](torch.randn(3))
    except Exception:
        return "error"
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch._dynamo.error_on_graph_break(True):
                torch.compile(namespace["fn"], backend="eager")(torch.randn(3))
    except Exception as exc:  # the break, as the compiler reports it
        found = re.search(r"gb(\d{4})\.html", str(exc))
        return f"GB{found.group(1)}" if found else "error"
    return None


def _breaking(probes: dict[str, str], imports: str) -> dict[str, str]:
    """{name: GB id} for the probes (name -> a call on the input `x`) that break in default
    mode, each compiled as `y = <call>` after `imports`; 'ok' ones are left out."""
    broken: dict[str, str] = {}
    for name, call in probes.items():
        gb = _break_of(f"{imports}def fn(x):\n    y = {call}\n    return x + 1, y\n")
        if gb not in (None, "error"):
            broken[name] = gb
    return dict(sorted(broken.items()))


def _probe_optimizer_steps() -> dict[str, str]:
    """{torch.optim class: GB id} for the optimizers whose `step()` breaks the graph of the
    compiled code that calls it, each built with its defaults (lr=0.01) on a Linear whose
    gradients are set. An optimizer that cannot be built or stepped so is left out."""
    import torch

    broken: dict[str, str] = {}
    for name in sorted(getattr(torch.optim, "__all__", ())):
        cls = getattr(torch.optim, name, None)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer:
            continue
        try:
            cls(torch.nn.Linear(3, 1).parameters(), lr=0.01)
        except Exception:  # noqa: BLE001 -- Muon wants 2-D parameters only, ...
            continue
        setup = OPTIMIZER_PROBE_SETUP + f"_step_opt = torch.optim.{name}(_lin.parameters(), lr=0.01)\n"
        gb = _break_of(f"{setup}def fn(x):\n    y = _step_opt.step()\n    return x + 1, y\n")
        if gb not in (None, "error"):
            broken[f"torch.optim.{name}"] = gb
    return broken


def _probe_calls() -> dict[str, str]:
    """{qualname: GB id} for the CALL_PROBES that break in default mode."""
    import torch

    state = random.getstate() if (random := importlib.import_module("random")) else None
    broken = _breaking(CALL_PROBES, PROBE_IMPORTS)
    random.setstate(state)
    torch._dynamo.reset()
    return broken


def _probe_data_reads() -> dict[str, str]:
    """{name: GB id} for the DATA_READ_PROBES that break in default mode."""
    return _breaking(DATA_READ_PROBES, "import math, torch\n")


def _aten_ops_tagged(tag_name: str) -> set[str]:
    """The aten op packets (`nonzero`, `t_`) with an overload that carries torch.Tag.<tag_name>."""
    import torch

    tag = getattr(torch.Tag, tag_name)
    tagged = set()
    for name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, name)
            overloads = [getattr(packet, o) for o in packet.overloads()]
        except Exception:
            continue
        if any(tag in op.tags for op in overloads):
            tagged.add(name)
    return tagged


def _dynamic_shape_candidates() -> set[str]:
    """The public torch.* / Tensor.* names of the aten ops tagged `dynamic_output_shape`."""
    import torch

    tagged = {name.lstrip("_").removesuffix("2").removesuffix("_dim")
              for name in _aten_ops_tagged("dynamic_output_shape")}
    names = set()
    for op in tagged - DYNAMIC_SHAPE_HANDLED_ELSEWHERE:
        names |= {f"torch.{op}"} if hasattr(torch, op) else set()
        names |= {f"Tensor.{op}"} if hasattr(torch.Tensor, op) else set()
    return names


def _probe_dynamic_shapes() -> dict[str, str]:
    """{name: GB id} for the DYNAMIC_SHAPE_PROBES that break in default mode. A tagged op with
    no probe stops the run: a new release's new op must be probed, not silently dropped."""
    unprobed = _dynamic_shape_candidates() - set(DYNAMIC_SHAPE_PROBES)
    if unprobed:
        raise SystemExit(f"ops tagged dynamic_output_shape with no probe in DYNAMIC_SHAPE_PROBES: {sorted(unprobed)}")
    return _breaking(DYNAMIC_SHAPE_PROBES, "import torch\n")


def _probe_inplace_views() -> dict[str, str]:
    """{Tensor method: GB id} for the INPLACE_VIEW_PROBES that break when called on the
    compiled frame's input. An aten op tagged `inplace_view` with no probe stops the run."""
    import torch

    tagged = {name for name in _aten_ops_tagged("inplace_view") if hasattr(torch.Tensor, name)}
    unprobed = tagged - set(INPLACE_VIEW_PROBES) - INPLACE_VIEW_HANDLED_ELSEWHERE
    if unprobed:
        raise SystemExit(f"ops tagged inplace_view with no probe in INPLACE_VIEW_PROBES: {sorted(unprobed)}")
    return _breaking(INPLACE_VIEW_PROBES, "import torch\n")


def _deprecated_signatures() -> dict[str, list[list[tuple[str, str]]]]:
    """{method: [[(type, name), ...] per deprecated form]} for the Tensor methods whose
    deprecated signatures torch's argument parser accepts, read from the `...|deprecated`
    strings in libtorch_python (the function forms, whose first parameter is `Tensor input`,
    and forms with keyword-only parts are left out: no model code spells those)."""
    import torch

    found: dict[str, list[list[tuple[str, str]]]] = {}
    for library in sorted((Path(torch.__file__).parent / "lib").glob("libtorch_python.*")):
        data = library.read_bytes()
        for match in re.finditer(rb"([a-z_]+)\(([A-Za-z0-9_ ,]*)\)\|deprecated", data):
            params = [tuple(p.strip().split(" ", 1)) for p in match.group(2).decode().split(",") if p.strip()]
            if not params or any(len(p) != 2 or p[0] not in ("Scalar", "Tensor") for p in params):
                continue
            if params[0] == ("Tensor", "input"):
                continue
            forms = found.setdefault(match.group(1).decode(), [])
            if params not in forms:
                forms.append(params)
    return found


# Example tensors for the deprecated forms' parameters, by name; the receiver takes the first
# of RECEIVER_SHAPES that eager accepts.
DEPRECATED_ARGUMENTS = {"other": "q", "tensor1": "q", "tensor2": "q.abs() + 1", "mat": "M", "mat1": "M",
                        "mat2": "M", "vec": "q", "vec1": "q", "vec2": "q", "batch1": "B", "batch2": "B"}
RECEIVER_SHAPES = ("p", "M", "B")


def _probe_deprecated_signatures() -> dict[str, dict]:
    """{"Tensor.<method>": {"signatures": [...], "gb": GB id}} for the deprecated forms that
    break the graph in default mode, each compiled on (3,) / (3, 3) / (2, 3, 3) inputs next to
    a control: the same call in the current signature (tensors positional, scalars as keywords)
    must compile whole on the same receiver, so a break is the deprecated form's own."""
    import torch

    def probe(receiver: str, call: str) -> str | None:
        return _break_of("import torch\ndef fn(x):\n    p, q = x.clone(), x.clone() + 1\n"
                         "    M, B = torch.ones(3, 3), torch.ones(2, 3, 3)\n"
                         f"    r = {receiver}.{call}\n    return x + 1, r\n")

    # A receiver of the wrong shape fails in fake-tensor propagation, which logs a traceback:
    # that is the control doing its job, not news.
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level, fake_log.level = fake_log.level, logging.CRITICAL
    broken: dict[str, dict] = {}
    for method, forms in sorted(_deprecated_signatures().items()):
        for params in forms:
            if any(kind == "Tensor" and name not in DEPRECATED_ARGUMENTS for kind, name in params):
                continue
            args = ", ".join("0.5" if kind == "Scalar" else DEPRECATED_ARGUMENTS[name] for kind, name in params)
            current = ", ".join([DEPRECATED_ARGUMENTS[name] for kind, name in params if kind == "Tensor"]
                                + [f"{name}=0.5" for kind, name in params if kind == "Scalar"])
            for receiver in RECEIVER_SHAPES:
                if probe(receiver, f"{method}({current})") is not None:
                    continue  # this receiver's shape does not fit the op: try the next one
                gb = probe(receiver, f"{method}({args})")
                if gb is not None and gb != "error":
                    entry = broken.setdefault(f"Tensor.{method}", {"signatures": [], "gb": gb})
                    entry["signatures"].append(", ".join(f"{kind} {name}" for kind, name in params))
                break
    fake_log.setLevel(level)
    torch._dynamo.reset()
    return broken


def _skipped_modules() -> list[str]:
    """The top-level packages in Dynamo's THIRDPARTY_SKIPLIST, numpy left out (traced through
    torch._numpy, and measured call by call in numpy_random / size_specialising_calls)."""
    from torch._dynamo import trace_rules

    return sorted({name.split(".")[0] for name in getattr(trace_rules, "THIRDPARTY_SKIPLIST", ())} - {"numpy"})


def _gb_settings() -> dict[str, list[str]]:
    """GB id -> the torch._dynamo.config switches its own hints say remove it
    (`Set torch._dynamo.config.capture_scalar_outputs = True`), from the graph-break registry
    this release ships; only names the release's config has. `tcl fix --verify` tries them where
    the examples break with that id at run time."""
    import torch._dynamo
    import torch._dynamo.config as config

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    if not path.is_file():
        return {}
    registry = json.loads(path.read_text(encoding="utf-8"))
    found: dict[str, list[str]] = {}
    for gb_id, entries in sorted(registry.items()):
        text = json.dumps(entries)
        names = sorted({name for name in re.findall(r"config\.(\w+)\s*=\s*True", text) if hasattr(config, name)})
        if names:
            found[gb_id] = names
    return found


def _probe_numpy_random() -> dict[str, dict]:
    """{np.random name: {"scalar": GB id | None, "array": GB id | None, "size_at": k}} for the
    NUMPY_RANDOM_PROBES, compiled in default mode (None: no break; a form not probed is left
    out). The draw's value feeds tensor arithmetic, as model code uses it."""
    import torch

    found: dict[str, dict] = {}
    for name, (scalar, array, size_at) in NUMPY_RANDOM_PROBES.items():
        entry: dict = {"size_at": size_at}
        for form, call in (("scalar", scalar), ("array", array)):
            if call is None:
                continue
            use = "x + 1" if name == "seed" else "x + torch.as_tensor(y).float().sum()" if form == "array" else "x * y"
            entry[form] = _break_of(f"import numpy as np\nimport torch\ndef fn(x):\n    y = {call}\n    return {use}\n")
        found[name] = entry
    torch._dynamo.reset()
    return found


def _probe_size_specialising() -> dict[str, str]:
    """{name: "receiver" | "size arguments"} for the SIZE_PROBES calls that recompile on every
    new size, counted per call as tcl.verify.compile_trace counts them."""
    import torch

    sys.path.insert(0, str(OUT_DIR.parent.parent))
    from tcl.verify.compile_trace import CompileTrace, persistent

    found: dict[str, str] = {}
    for name, (call, carrier) in SIZE_PROBES.items():
        namespace: dict = {}
        exec(compile(f"import math, numpy as np, torch\ndef fn(x):\n    n = x.shape[0]\n    return {call}\n", "<probe>", "exec"),
             namespace)
        torch._dynamo.reset()
        compiled = torch.compile(namespace["fn"], backend="eager")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with CompileTrace() as trace:
                    for size in (4, 6, 8, 10):
                        trace.next_call()
                        compiled(torch.randn(size, size))
        except Exception:  # a probe this release cannot compile says nothing about sizes
            continue
        if persistent(trace.compilations):
            found[name] = carrier
    torch._dynamo.reset()
    return dict(sorted(found.items()))


def _annotation_text(annotation) -> str | None:
    if annotation is inspect.Signature.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    if annotation is None or annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", None) if isinstance(annotation, type) else str(annotation).replace("typing.", "")


def _stub_returns(torch_dir: Path) -> dict[str, dict[str, set[str]]]:
    """{stub module ('torch._C._VariableFunctions'): {function: {return annotation text}}}."""
    stubs: dict[str, dict[str, set[str]]] = {}
    for path in sorted(torch_dir.rglob("*.pyi")):
        relative = path.relative_to(torch_dir.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        functions: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                functions.setdefault(node.name, set()).add(ast.unparse(node.returns))
        stubs[module] = functions
    return stubs


# The signature line torch's docstrings open with (`broadcast_shapes(*shapes) -> Size`) and the
# type comment of TorchScript-era functions (`# type: (Tensor, float) -> Tensor`): where a Python
# function has no return annotation, these are torch's own word on what it returns.
_DOC_SIGNATURE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?(?P<name>[A-Za-z_]\w*)\(.*\)\s*->\s*(?P<ret>.+?)\s*$")
_TYPE_COMMENT = re.compile(r"^\s*#\s*type:\s*\(.*\)\s*->\s*(?P<ret>.+?)\s*$")


def _documented_return(name: str, obj) -> str | None:
    """The return type a function without an annotation documents: its type comment, else its
    docstring's first line when that line is its own signature."""
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        source = ""
    for line in source.splitlines()[1:12]:
        found = _TYPE_COMMENT.match(line)
        if found:
            return found.group("ret").strip("()")
    doc = (inspect.getdoc(obj) or "").strip()
    found = _DOC_SIGNATURE.match(doc.splitlines()[0]) if doc else None
    if found and found.group("name") in (name, getattr(obj, "__name__", name)):
        return found.group("ret")
    return None


def _returns_of(name: str, obj, stubs) -> str | None:
    if inspect.isfunction(obj):
        try:
            text = _annotation_text(inspect.signature(obj).return_annotation)
        except (TypeError, ValueError):
            return None
        if not text:
            text = _documented_return(name, obj)
        return _classify({text}) if text else None
    if inspect.isbuiltin(obj) or type(obj).__name__ in ("builtin_function_or_method",):
        module = getattr(obj, "__module__", None) or ""
        candidates = [module, "torch._C._VariableFunctions", "torch._C"] if module in ("torch", "torch._C") else [module]
        for stub in candidates:
            found = stubs.get(stub, {}).get(getattr(obj, "__name__", name))
            if found:
                return _classify(found)
    return None


def _import(name: str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except Exception:  # a submodule that needs an optional dependency
        return None


def generate() -> dict:
    import pathlib

    import numpy
    import torch

    module_classes, other_classes = set(), set()
    for package_name in MODULE_PACKAGES:
        package = _import(package_name)
        if package is None:
            continue
        names = [package_name] + [m.name for m in pkgutil.walk_packages(package.__path__, package_name + ".")]
        for module_name in names:
            module = _import(module_name)
            if module is None:
                continue
            for attr, value in vars(module).items():
                if inspect.isclass(value):
                    if issubclass(value, torch.nn.Module):
                        module_classes.add(f"{module_name}.{attr}")
                    elif value.__module__.startswith(MODULE_PACKAGES):
                        other_classes.add(f"{module_name}.{attr}")
    stubs = _stub_returns(Path(torch.__file__).parent)
    returns: dict[str, str] = {}
    for namespace in FUNCTION_NAMESPACES:
        module = _import(namespace)
        if module is None:
            continue
        for attr in dir(module):
            if attr.startswith("__"):
                continue
            try:
                value = getattr(module, attr)
            except Exception:
                continue
            if inspect.isclass(value) or inspect.ismodule(value) or not callable(value):
                continue
            kind = _returns_of(attr, value, stubs)
            if kind is not None:
                returns[f"{namespace}.{attr}"] = kind
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return {
        "torch": torch.__version__,
        "release": f"{major}.{minor}",
        "generated_by": "scripts/gen_torch_facts.py",
        "module_classes": sorted(module_classes),
        "other_classes": sorted(other_classes - module_classes),
        "returns": dict(sorted(returns.items())),
        "tensor_attributes": sorted(_public(torch.Tensor) - _python_attributes()),
        "python_attributes": sorted(_python_attributes() - _public(torch.Tensor)),
        "tensor_methods": sorted(name for name in _public(torch.Tensor) - _python_attributes()
                                 if callable(getattr(torch.Tensor, name))),
        "shared_attributes": sorted((_public(torch.Tensor) - _python_attributes()) & (
            _public(numpy.ndarray) | _public(torch.nn.Module) | _public(pathlib.PurePosixPath))),
        "tensor_input_calls": _tensor_input_calls(),
        "skipped_calls": _probe_calls(),
        "size_specialising_calls": _probe_size_specialising(),
        "numpy_random": _probe_numpy_random(),
        "data_reading_calls": _probe_data_reads(),
        "dynamic_shape_calls": _probe_dynamic_shapes(),
        "inplace_view_methods": _probe_inplace_views(),
        "deprecated_signature_calls": _probe_deprecated_signatures(),
        "skipped_modules": _skipped_modules(),
        "gb_settings": _gb_settings(),
        "optimizer_calls": _breaking(OPTIMIZER_PROBES, OPTIMIZER_PROBE_SETUP),
        "optimizer_steps": _probe_optimizer_steps(),
        "breaking_tensor_methods": {name.removeprefix("Tensor."): gb for name, gb in _breaking(
            {f"Tensor.{k}": v for k, v in TENSOR_METHOD_PROBES.items()}, "import torch\n").items()},
    }


TENSOR_FIRST_PARAMETERS = frozenset({"input", "tensor", "input1", "x1", "A"})


def _tensor_input_calls() -> list[str]:
    import torch
    import torch.nn.functional

    names = set()
    for namespace, module in (("torch", torch), ("torch.nn.functional", torch.nn.functional)):
        for attr in dir(module):
            value = getattr(module, attr, None)
            if attr.startswith("_") or not callable(value) or inspect.isclass(value) or inspect.ismodule(value):
                continue
            if _first_parameter(value) in TENSOR_FIRST_PARAMETERS:
                names.add(f"{namespace}.{attr}")
    return sorted(names)


def _first_parameter(function) -> str | None:
    try:
        parameters = list(inspect.signature(function).parameters)
        return parameters[0] if parameters else None
    except (ValueError, TypeError):  # a C function: `isnan(input) -> Tensor` heads its docstring
        lines = (getattr(function, "__doc__", None) or "").strip().splitlines()
        match = re.match(r"^\s*[\w.]+\((\*?\w+)", lines[0]) if lines else None
        return match.group(1) if match else None


def _public(cls) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _python_attributes() -> set[str]:
    class _Member(enum.Enum):  # an Enum member's `name` / `value`
        ONE = 1

    return set().union(*(_public(t) for t in (list, dict, str, set, tuple, int, float, bool, _Member.ONE)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in file instead of writing it")
    args = parser.parse_args(argv)
    facts = generate()
    target = OUT_DIR / f"torch-{facts['release']}.json"
    text = json.dumps(facts, indent=1) + "\n"
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is out of date: python scripts/gen_torch_facts.py", file=sys.stderr)
            return 1
        print(f"{target}: up to date ({len(facts['module_classes'])} module classes, {len(facts['returns'])} "
              f"functions, {len(facts['skipped_calls'])} breaking calls, "
              f"{len(facts['size_specialising_calls'])} size-specialising calls)")
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}: {len(facts['module_classes'])} module classes, {len(facts['other_classes'])} other "
          f"classes, {len(facts['returns'])} functions, {len(facts['skipped_calls'])} of "
          f"{len(CALL_PROBES)} probed calls break, {len(facts['size_specialising_calls'])} of "
          f"{len(SIZE_PROBES)} specialise on sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
