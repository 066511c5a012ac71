"""eval/labels/*_findings.json are well-formed; eval/hand_labels.py matches labels to findings."""

import importlib.util
import os
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = importlib.util.spec_from_file_location("hand_labels", os.path.join(ROOT, "eval", "hand_labels.py"))
hand_labels = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hand_labels)


@pytest.mark.parametrize("sample", sorted(hand_labels.SAMPLES))
def test_labels_file_well_formed(sample):
    path, libraries, sampled = hand_labels.SAMPLES[sample]
    labels = hand_labels.load_labels(path)
    assert isinstance(labels, list) and len(labels) >= 100
    assert set(sampled) <= set(libraries)
    for lab in labels:
        for field in hand_labels.FIELDS:
            assert field in lab, (field, lab)
        assert lab["library"] in libraries
        assert lab["label"] in hand_labels.LABEL_VALUES
        assert isinstance(lab["line"], int) and lab["line"] > 0
        assert lab["code"].startswith("TCL")
        assert lab["path"].startswith(lab["library"] + "/") and not os.path.isabs(lab["path"])
        assert lab["source"] == lab["source"].strip() and lab["source"]
        assert len(lab["message"]) <= 200  # tcl's message, with the note where it says the frame falls back
        assert isinstance(lab["reason"], str) and lab["reason"]
        assert isinstance(lab["reproduced"], bool)
        assert lab["repro"] is None or isinstance(lab["repro"], str)
        if lab["reproduced"]:
            assert lab["repro"], lab
        if lab["repro"]:
            assert os.path.isfile(os.path.join(ROOT, lab["repro"])), lab["repro"]


def test_match_tolerates_line_shift_and_pairs_by_column():
    labels = [
        {"path": "p/a.py", "line": 10, "col": 9, "code": "TCL301", "source": "x[m] = y[m]", "label": "FP"},
        {"path": "p/a.py", "line": 10, "col": 20, "code": "TCL301", "source": "x[m] = y[m]", "label": "TP"},
        {"path": "p/a.py", "line": 30, "col": 1, "code": "TCL105", "source": "warn()", "label": "TP"},
    ]
    findings = [
        {"path": "p/a.py", "line": 12, "col": 20, "code": "TCL301", "source": "x[m] = y[m]"},
        {"path": "p/a.py", "line": 12, "col": 9, "code": "TCL301", "source": "x[m] = y[m]"},
        {"path": "p/b.py", "line": 1, "col": 1, "code": "TCL201", "source": "if t:"},
    ]
    pairs, unlabelled, gone = hand_labels.match(labels, findings)
    assert sorted((lab["label"], f["col"]) for lab, f in pairs) == [("FP", 9), ("TP", 20)]
    assert [f["path"] for f in unlabelled] == ["p/b.py"]
    assert [g["code"] for g in gone] == ["TCL105"]


def test_rerun_when_installed(capsys):
    site = sysconfig.get_paths()["purelib"]
    if not os.path.isdir(os.path.join(site, "julius")):
        pytest.skip("julius not installed")
    assert hand_labels.main(["--site-packages", site, "--sample", "heldout"]) == 0
    out = capsys.readouterr().out
    assert "overall" in out
