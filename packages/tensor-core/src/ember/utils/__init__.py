"""ember.utils: helpers. `ember.utils.data` is ember.data (ember-data) and
`ember.utils.checkpoint` is ember.autograd.checkpoint (ember-autograd), as PyTorch
spells them; ember._components makes both import paths one module."""


def __getattr__(name):
    if name in ("data", "checkpoint"):
        import importlib
        return importlib.import_module(f"ember.utils.{name}")
    raise AttributeError(f"module 'ember.utils' has no attribute {name!r}")
