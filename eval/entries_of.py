"""The entry each evaluation model compiles, as `pytest --tcl-record` would record it.

    python eval/entries_of.py OUT.json NAME [NAME ...]

Builds each model (shape 0, as eval/worker.py does) and names the callable the worker hands to
`torch.compile` with tcl.entry_recording.entry_of, the recorder's own function: an
`nn.Module` as its class (`torchtune.modules.transformer:TransformerDecoder`), a bound method
by its instance's class (`stable_baselines3.common.policies:ActorCriticPolicy.evaluate_actions`),
a function of the corpus's builders by its qualified name (`corpus.zuko:_nll.<locals>.nll`),
with the classes of the objects its free variables hold (`opt` -> `torch_optimizer.adamp:AdamP`)
and of the submodules of the modules it compiles (their forwards are entries too).
run_eval.py's user-side scoring starts tcl from exactly these entries, with --follow-imports,
over the builder files only (the "user code"), as a user who recorded their test run would.
Run in a subprocess: building every model imports every library.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))


def main(out_path: str, names: list[str]) -> int:
    import tv_stub

    tv_stub.install()
    import torch
    from models import MODELS

    from tcl.entry_recording import bindings_of, entry_of, module_classes_of

    out = {}
    for name in names:
        library, mode, builder = MODELS[name]
        try:
            torch.manual_seed(0)
            target, _, _ = builder()
            described = entry_of(target)
        except Exception as exc:  # noqa: BLE001 -- a model that does not build: no entry
            out[name] = {"problem": f"build: {type(exc).__name__}: {str(exc)[:200]}"}
            continue
        if isinstance(described, str):
            out[name] = {"problem": described}
        else:
            spec, file, line = described
            # what the recorder keeps too: the classes of the objects its free variables hold
            bindings = {k: [v] for k, v in bindings_of(target).items()}
            out[name] = {"entry": spec, "file": file, "line": line, "bindings": bindings,
                         "modules": module_classes_of(target)}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
