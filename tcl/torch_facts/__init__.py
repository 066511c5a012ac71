"""Facts about torch generated from torch itself, one JSON file per release (torch-X.Y.json).

scripts/gen_torch_facts.py writes them by importing a torch release: the dotted names at which
nn.Module classes can be imported (private bases such as `torch.nn.modules.loss._Loss`
included), the other classes of torch.nn, and which functions of torch's namespaces return
tensors or only Python values (from return annotations and type stubs), which probed calls
break the graph when compiled (with their GB ids, measured on that release), and which probed
calls recompile on every new size of their input (measured the same way), and which calls have
an output shape that follows their input's values (aten's dynamic_output_shape tag, each
compiled). The analyzer asks this
module instead of guessing from spelling; a name the data does not know gets None, and the
caller falls back to what it did without data. A target release with no file of its own uses
the nearest generated release (the newest older one, else the oldest newer one). Reading the
data never imports torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class TorchFacts:
    release: tuple[int, int]
    module_classes: frozenset[str]
    other_classes: frozenset[str]
    returns: dict[str, str]  # qualname -> "tensor" | "python"
    skipped_calls: dict[str, str] | None = None  # qualname -> GB id, measured on this release
    tensor_attributes: frozenset[str] = frozenset()  # Tensor has them; list/dict/str/... do not
    python_attributes: frozenset[str] = frozenset()  # list/dict/str/... have them; Tensor does not
    shared_attributes: frozenset[str] = frozenset()  # tensor_attributes an ndarray, Module or path has too
    tensor_methods: frozenset[str] = frozenset()  # tensor_attributes that are methods: evidence only when called
    tensor_input_calls: frozenset[str] = frozenset()  # torch functions whose first parameter is a tensor
    # "Tensor.fill_diagonal_" / "torch.triu_indices" -> "receiver" | "size arguments": calls that
    # recompile on every new size of that input, measured on this release
    size_specialising_calls: dict[str, str] | None = None
    # np.random name -> {"scalar": GB | None, "array": GB | None, "size_at": k}: whether a
    # one-value and an array draw break the graph, measured on this release
    numpy_random: dict[str, dict] | None = None
    # "torch.allclose" / "Tensor.equal" / "math.isclose" -> GB id: calls that reduce tensor data
    # to a Python bool or number and break the graph, measured on this release
    data_reading_calls: dict[str, str] | None = None
    # "torch.bincount" / "Tensor.nonzero" -> GB id: calls whose output shape depends on their
    # input's values (from aten's dynamic_output_shape tag) that break, measured on this release
    dynamic_shape_calls: dict[str, str] | None = None
    # Tensor method ("t_", "detach_") -> GB id: in-place view ops that break when called on a
    # graph input (the compiled frame's argument, a module's buffer or parameter), measured
    inplace_view_methods: dict[str, str] | None = None
    # "Tensor.add_" -> {"signatures": ["Scalar alpha, Tensor other"], "gb": GB id}: deprecated
    # scalar-first forms (torch's own `|deprecated` signatures) that break, measured on this release
    deprecated_signature_calls: dict[str, dict] | None = None
    # top-level packages Dynamo's trace rules skip whole (THIRDPARTY_SKIPLIST, numpy left out)
    skipped_modules: frozenset[str] | None = None
    # Tensor method -> GB id: methods returning Python values that break, measured on this release
    breaking_tensor_methods: dict[str, str] | None = None
    # "Optimizer.zero_grad" / "LRScheduler.step" -> GB id: methods a compiled training step calls
    # that break, measured on this release
    optimizer_calls: dict[str, str] | None = None
    optimizer_steps: dict[str, str] | None = None  # torch.optim class -> GB id of step()
    # GB id -> the torch._dynamo.config switches the registry's hints for that id name
    gb_settings: dict[str, list[str]] | None = None

    def is_module_class(self, qualname: str) -> bool | None:
        """True/False where torch's data knows the name, None where it does not."""
        if qualname in self.module_classes:
            return True
        if qualname in self.other_classes:
            return False
        return None

    def return_kind(self, qualname: str) -> str | None:
        return self.returns.get(qualname)


def available_releases() -> list[tuple[int, int]]:
    releases = []
    for path in DATA_DIR.glob("torch-*.json"):
        match = re.fullmatch(r"torch-(\d+)\.(\d+)\.json", path.name)
        if match:
            releases.append((int(match.group(1)), int(match.group(2))))
    return sorted(releases)


def nearest_release(target: tuple[int, int]) -> tuple[int, int] | None:
    releases = available_releases()
    older = [r for r in releases if r <= tuple(target)]
    if older:
        return older[-1]
    return releases[0] if releases else None


@lru_cache(maxsize=8)
def facts_for(target: tuple[int, int]) -> TorchFacts | None:
    """The facts of the release nearest `target` (None if no data file can be read)."""
    release = nearest_release(tuple(target))
    if release is None:
        return None
    try:
        data = json.loads((DATA_DIR / f"torch-{release[0]}.{release[1]}.json").read_text(encoding="utf-8"))
        return TorchFacts(
            release=release,
            module_classes=frozenset(data["module_classes"]),
            other_classes=frozenset(data["other_classes"]),
            returns=dict(data["returns"]),
            skipped_calls=dict(data["skipped_calls"]) if "skipped_calls" in data else None,
            tensor_attributes=frozenset(data.get("tensor_attributes", ())),
            python_attributes=frozenset(data.get("python_attributes", ())),
            shared_attributes=frozenset(data.get("shared_attributes", ())),
            tensor_methods=frozenset(data.get("tensor_methods", ())),
            tensor_input_calls=frozenset(data.get("tensor_input_calls", ())),
            size_specialising_calls=(dict(data["size_specialising_calls"])
                                     if "size_specialising_calls" in data else None),
            numpy_random=dict(data["numpy_random"]) if "numpy_random" in data else None,
            data_reading_calls=dict(data["data_reading_calls"]) if "data_reading_calls" in data else None,
            dynamic_shape_calls=dict(data["dynamic_shape_calls"]) if "dynamic_shape_calls" in data else None,
            inplace_view_methods=dict(data["inplace_view_methods"]) if "inplace_view_methods" in data else None,
            deprecated_signature_calls=(dict(data["deprecated_signature_calls"])
                                        if "deprecated_signature_calls" in data else None),
            skipped_modules=frozenset(data["skipped_modules"]) if "skipped_modules" in data else None,
            breaking_tensor_methods=(dict(data["breaking_tensor_methods"])
                                     if "breaking_tensor_methods" in data else None),
            optimizer_calls=dict(data["optimizer_calls"]) if "optimizer_calls" in data else None,
            optimizer_steps=dict(data["optimizer_steps"]) if "optimizer_steps" in data else None,
            gb_settings=dict(data["gb_settings"]) if "gb_settings" in data else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def measured(release: tuple[int, ...], table: str) -> dict:
    """One of the tables measured on the compiler (`size_specialising_calls`, `numpy_random`)
    for the release nearest `release`; {} without data. The facts' own dict: read, never edit."""
    facts = facts_for(tuple(release[:2]))
    return (getattr(facts, table) or {}) if facts is not None else {}


@lru_cache(maxsize=1)
def all_releases() -> TorchFacts | None:
    """What every generated release agrees on, for code that does not know its target release
    (class bases, the kinds of torch calls): a name the releases disagree about is unknown."""
    facts = [f for f in (facts_for(r) for r in available_releases()) if f is not None]
    if not facts:
        return None
    modules = frozenset.union(*(f.module_classes for f in facts))
    others = frozenset.union(*(f.other_classes for f in facts)) - modules
    returns: dict[str, str] = {}
    for name in set().union(*(f.returns for f in facts)):
        kinds = {f.returns.get(name) for f in facts}
        if len(kinds) == 1:
            returns[name] = kinds.pop()
    return TorchFacts(
        facts[-1].release, modules, others, returns,
        tensor_attributes=frozenset.intersection(*(f.tensor_attributes for f in facts)),
        python_attributes=frozenset.intersection(*(f.python_attributes for f in facts)),
        shared_attributes=frozenset.union(*(f.shared_attributes for f in facts)),
        tensor_methods=frozenset.union(*(f.tensor_methods for f in facts)),
        tensor_input_calls=frozenset.intersection(*(f.tensor_input_calls for f in facts)),
    )


def is_module_class(qualname: str) -> bool | None:
    facts = all_releases()
    return facts.is_module_class(qualname) if facts is not None else None


def return_kind(qualname: str) -> str | None:
    facts = all_releases()
    return facts.return_kind(qualname) if facts is not None else None
