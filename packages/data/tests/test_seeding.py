"""Worker seeding: ember, random and NumPy are seeded from base_seed + worker id, the
base seed is drawn from the loader's generator each epoch: workers differ, epochs
differ, and a seeded generator repeats the whole run."""
import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as em
from ember.data import DataLoader, Dataset, get_worker_info

# child interpreters import ember from wherever this one did (the venv in CI, the
# source tree when PYTHONPATH points there)
SRC = os.pathsep.join(p for p in sys.path if p)


class Noise(Dataset):
    """Each sample: (worker id, ember draw, random draw, NumPy draw, worker seed)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return [info.id if info else -1, em.rand(()).item(), random.random(),
                float(np.random.rand()), info.seed if info else -1]


def rows(epoch):
    return [tuple(r) for r in epoch]


def make(seed=None, persistent=False, num_workers=2):
    g = None if seed is None else em.Generator().manual_seed(seed)
    return DataLoader(Noise(), batch_size=None, num_workers=num_workers, generator=g,
                      persistent_workers=persistent)


@pytest.mark.parametrize("persistent", [False, True])
def test_workers_differ_epochs_differ_and_seeded_runs_repeat(persistent):
    loader = make(seed=7, persistent=persistent)
    e1, e2 = rows(loader), rows(loader)
    w0 = [r for r in e1 if r[0] == 0]
    w1 = [r for r in e1 if r[0] == 1]
    assert len(w0) == len(w1) == 4
    for k in (1, 2, 3):                      # ember, random, numpy
        assert [r[k] for r in w0] != [r[k] for r in w1]
        assert [r[k] for r in e1] != [r[k] for r in e2]
        assert len({r[k] for r in e1}) == 8
    assert w1[0][4] == w0[0][4] + 1 and e1[0][4] != e2[0][4]
    again = make(seed=7, persistent=persistent)
    assert rows(again) == e1 and rows(again) == e2
    other = make(seed=8, persistent=persistent)
    assert rows(other) != e1


def test_persistent_and_fresh_workers_draw_the_same_numbers():
    fresh, pers = make(seed=3), make(seed=3, persistent=True)
    assert [rows(fresh) for _ in range(2)] == [rows(pers) for _ in range(2)]


def test_without_a_generator_the_base_seed_comes_from_embers_default_generator():
    em.manual_seed(123)
    a = rows(make())
    em.manual_seed(123)
    b = rows(make())
    assert a == b
    assert rows(make()) != a


def test_numpy_imported_only_inside_the_worker_is_seeded_too(tmp_path):
    """Workers don't import NumPy eagerly (a tenth of a second each); a hook seeds it
    when the dataset first imports it."""
    script = tmp_path / "lazy_numpy.py"
    script.write_text(textwrap.dedent("""
        import sys
        import ember as em
        from ember.data import DataLoader, Dataset

        class Lazy(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                import numpy as np
                return float(np.random.rand())

        if __name__ == "__main__":
            assert "numpy" not in sys.modules
            g = em.Generator().manual_seed(1)
            print([b for b in DataLoader(Lazy(), batch_size=None, num_workers=2,
                                         generator=g)])
        """))
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=60, env=env) for _ in range(2)]
    assert runs[0].returncode == 0, runs[0].stderr
    vals = eval(runs[0].stdout)
    assert runs[0].stdout == runs[1].stdout
    assert vals[0] != vals[1] and len(set(vals)) == 4
