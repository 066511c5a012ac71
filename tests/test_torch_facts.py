"""tcl/torch_facts: facts generated from torch itself, and what the analyzer makes of them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcl import torch_facts
from tcl.config import Config
from tcl.engine import Analyzer

REPO = Path(__file__).resolve().parent.parent


def test_checked_in_facts_are_what_the_installed_torch_generates():
    torch = pytest.importorskip("torch")
    release = tuple(int(p) for p in torch.__version__.split(".")[:2])
    if release not in torch_facts.available_releases():
        pytest.skip(f"no generated facts for torch {release}")
    result = subprocess.run([sys.executable, "scripts/gen_torch_facts.py", "--check"], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_nearest_release_and_unknown_names():
    releases = torch_facts.available_releases()
    assert releases, "tcl/torch_facts holds no generated file"
    assert torch_facts.nearest_release((99, 0)) == releases[-1]
    assert torch_facts.nearest_release((0, 1)) == releases[0]
    assert torch_facts.is_module_class("torch.nn.modules.loss._Loss") is True
    assert torch_facts.is_module_class("torch.nn.Parameter") is False
    assert torch_facts.is_module_class("torch.nn.NoSuchThing") is None
    assert torch_facts.return_kind("torch.onnx.is_in_onnx_export") == "python"
    assert torch_facts.return_kind("torch.is_tensor") == "python"  # TypeIs[Tensor] is a bool
    assert torch_facts.return_kind("torch.abs") == "tensor"


@pytest.mark.parametrize("base", [
    "torch.nn.modules.loss._Loss", "torch.nn.modules.loss._WeightedLoss",
    "torch.nn.modules.batchnorm._BatchNorm", "torch.nn.modules.batchnorm._NormBase",
    "torch.nn.modules.conv._ConvNd", "torch.nn.modules.instancenorm._InstanceNorm",
    "torch.nn.modules.dropout._DropoutNd",
])
def test_subclasses_of_private_module_bases_are_analysed(base):
    module, _, name = base.rpartition(".")
    source = textwrap.dedent(f'''\
        import torch
        from {module} import {name}


        class Custom({name}):
            def forward(self, x):
                print(x)
                return x
    ''')
    report = Analyzer(Config()).check_source(source, "custom.py")
    assert [(f.code, f.line) for f in report.findings] == [("TCL101", 7)]


def test_a_non_module_class_of_torch_nn_is_not_taken_for_a_module_base():
    source = textwrap.dedent('''\
        import torch
        from torch.nn.utils.rnn import PackedSequence


        class Packed(PackedSequence):
            def forward(self, x):
                print(x)
                return x
    ''')
    assert Analyzer(Config()).check_source(source, "packed.py").findings == []
