"""Device backends. The CPU is built into ember._C.core; every other device type is a
Backend (see base.py) registered with ember._C.core.register_backend when its module
imports and finds its driver."""
