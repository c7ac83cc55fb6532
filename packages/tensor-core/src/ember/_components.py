"""The parts of the ember namespace that other distributions install, and the import
hooks that make every spelling of them behave the same.

`ember.nn`, `ember.optim`, `ember.data`, `ember.autograd`, `ember.multiprocessing` and
`ember.distributed` come from their own packages (ember-nn, ember-data, ...). Where one
is not installed, `import ember.nn`, `from ember import nn`, `em.nn` and
`importlib.import_module("ember.nn")` all raise the same ModuleNotFoundError, naming
the package to install (a finder at the end of sys.meta_path, asked only when no other
finder found the module). `importlib.util.find_spec("ember.nn")` raises that error
too rather than returning None: check for a component with try/except
ModuleNotFoundError (or importlib.metadata for its distribution).

PyTorch's paths that ember spells differently are aliases of ember's module (a finder
at the front of sys.meta_path): `ember.utils.data` *is* `ember.data` (and
`ember.utils.data.distributed` is `ember.data.distributed`, ...), and
`ember.utils.checkpoint` is `ember.autograd.checkpoint`. Importing an alias imports
the real module; nothing is loaded twice.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import sys

# top-level component -> the distribution that installs it
PACKAGES = {"autograd": "ember-autograd", "nn": "ember-nn", "optim": "ember-nn",
            "distributions": "ember-nn", "onnx": "ember-nn", "data": "ember-data",
            "multiprocessing": "ember-mp", "distributed": "ember-mp"}

# torch.<name> functions whose code is ember.nn.functional's: `ember.<name>` finds them
# in ember.nn._torch_functions (ember-nn) on first use (ember.__getattr__), and names
# the package to install where it is absent. ember-nn's tests check the two lists agree.
NN_FUNCTIONS = frozenset((
    "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "feature_dropout", "feature_dropout_", "celu", "celu_", "selu", "selu_", "threshold",
    "threshold_", "rrelu", "rrelu_", "bilinear", "constant_pad_nd", "group_norm",
    "native_group_norm",
    "instance_norm", "rms_norm", "cosine_similarity", "pairwise_distance", "pdist",
    "pixel_shuffle", "pixel_unshuffle", "embedding_bag", "affine_grid_generator",
    "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss",
    "triplet_margin_loss", "ctc_loss"))


def nn_function(name):
    """ember.<name> for a name of NN_FUNCTIONS (AttributeError naming ember-nn when it
    is not installed)."""
    try:
        module = importlib.import_module("ember.nn._torch_functions")
    except ModuleNotFoundError as e:
        if e.name is not None and e.name.split(".")[:2] == ["ember", "nn"]:
            raise AttributeError(f"ember.{name} needs the ember-nn package: pip install "
                                 f"ember-nn") from None
        raise
    return getattr(module, name)


# PyTorch's module path -> ember's module (and their submodules alike)
ALIASES = {"ember.utils.data": "ember.data",
           "ember.utils.checkpoint": "ember.autograd.checkpoint"}


def missing(fullname, component):
    """The ModuleNotFoundError for `fullname` when `component` ("nn", ...) is absent."""
    dist = PACKAGES[component]
    return ModuleNotFoundError(f"{fullname} needs the {dist} package: pip install {dist}",
                               name=fullname)


class _MissingComponentFinder:
    """Last on sys.meta_path: asked for ember.nn etc. only when no finder found it, so
    the component is not installed; answers with the error naming its package."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        prefix, _, name = fullname.partition(".")
        if prefix == "ember" and name in PACKAGES:
            raise missing(fullname, name)
        return None


def _target(fullname):
    for alias, real in ALIASES.items():
        if fullname == alias or fullname.startswith(alias + "."):
            return real + fullname[len(alias):]
    return None


class _AliasLoader:
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        try:
            module = importlib.import_module(self.real)
        except ModuleNotFoundError as e:
            component = self.real.split(".")[1]
            if e.name is not None and e.name.split(".")[:2] == ["ember", component]:
                raise missing(spec.name, component) from None
            raise
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system set module.__spec__ to the alias's spec: the module keeps
        # its own (its name, its relative imports)
        module.__spec__ = self._spec


class _AliasFinder:
    """First on sys.meta_path: ember.utils.data[.x] is ember.data[.x], ..."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        real = _target(fullname)
        if real is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))


def install():
    """Put the finders on sys.meta_path (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    if not any(isinstance(f, _MissingComponentFinder) for f in sys.meta_path):
        sys.meta_path.append(_MissingComponentFinder())
