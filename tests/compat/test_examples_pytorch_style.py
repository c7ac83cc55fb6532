"""examples/word_language_model.py and examples/tiny_gpt.py, PyTorch programs with only
the import changed, run briefly: they learn, and what they save loads back."""
import importlib.util
import os
import sys

import pytest

pytest.importorskip("ember.nn", reason="needs ember-nn")

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def _example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module      # where pickle finds the model's class, as for a script
    spec.loader.exec_module(module)
    return module


def test_word_language_model_saves_and_reloads_the_whole_model(tmp_path, capsys):
    lm = _example("word_language_model")
    best, reloaded = lm.main(["--epochs", "2", "--save", str(tmp_path / "lm.pt")])
    assert reloaded == pytest.approx(best, rel=1e-6)       # the reloaded model is the best one
    out = capsys.readouterr().out
    train = [float(line.split("train loss")[1].split("|")[0]) for line in out.splitlines()
             if "train loss" in line]
    assert train[-1] < train[0]


def test_tiny_gpt_learns_and_resumes_from_its_checkpoint(tmp_path, capsys):
    gpt = _example("tiny_gpt")
    out = str(tmp_path / "gpt.pt")
    losses = gpt.main(["--steps", "30", "--out", out])
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    more = gpt.main(["--steps", "3", "--out", out, "--resume"])
    assert "resumed from" in capsys.readouterr().out and len(more) == 3
    import ember as em
    ckpt = em.load(out)                                   # weights_only=True by default
    assert ckpt["step"] == 33 and set(ckpt) >= {"model", "optimizer", "loss", "vocab"}
