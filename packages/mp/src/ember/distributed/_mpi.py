"""MPI itself: mpi4py imported (which initializes MPI) on first use, MPI_Finalize at
exit, ember's dtypes as MPI datatypes, the state every process group shares, and the
errors."""
import atexit
import sys

import ember as em

_INSTALL = "pip install 'ember-mp[distributed]' (mpi4py and an MPI such as the mpich wheel)"


class DistError(RuntimeError):
    """Base of ember.distributed's errors."""


class DistBackendError(DistError):
    """MPI reported a failure."""


class DistTimeoutError(DistError):
    """A collective or a point-to-point transfer did not finish within the group's timeout."""


_MPI = None
_OWN_FINALIZE = False    # whether we (not mpi4py) call MPI_Finalize at exit


def _mpi():
    """mpi4py's MPI module, imported (which initializes MPI) on first use only."""
    global _MPI, _OWN_FINALIZE
    if _MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise ModuleNotFoundError(f"ember.distributed needs mpi4py: {_INSTALL}",
                                      name="mpi4py") from None
        if "mpi4py.MPI" not in sys.modules:
            # Finalize ourselves, and skip it after a failure: MPICH's MPI_Finalize
            # waits for peers that are dead or stuck, so a survivor would hang at exit.
            mpi4py.rc.finalize = False
            _OWN_FINALIZE = True
        try:
            from mpi4py import MPI
        except (ImportError, RuntimeError) as e:
            raise ModuleNotFoundError(f"ember.distributed: mpi4py can't load an MPI library "
                                      f"({e}); {_INSTALL}", name="mpi4py.MPI") from None
        _MPI = MPI
        if _OWN_FINALIZE:
            atexit.register(_finalize)
    return _MPI


def _finalize():
    if _STATE.failure is None and _MPI.Is_initialized() and not _MPI.Is_finalized():
        _free_windows()
        _MPI.Finalize()


def is_available():
    """True when mpi4py can be imported (ember.distributed's only backend is MPI)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


is_mpi_available = is_available


class _State:
    world = None          # the default ProcessGroup
    failure = None        # why the process groups are unusable (a timeout, an MPI error)
    check = True          # the metadata check


_STATE = _State()


def _mpi_types():
    MPI = _mpi()
    return {em.bool: MPI.C_BOOL, em.uint8: MPI.UINT8_T, em.int8: MPI.INT8_T,
            em.int16: MPI.INT16_T, em.int32: MPI.INT32_T, em.int64: MPI.INT64_T,
            # float16 moves as 2-byte words; reductions on it run in float32 (_stage)
            em.float16: MPI.UINT16_T, em.float32: MPI.FLOAT, em.float64: MPI.DOUBLE}


_WINDOWS = []    # every shared window, freed at exit (tensors may view them until then)


def _free_windows():
    if _STATE.failure is None:
        for w in _WINDOWS:
            w._free()
    _WINDOWS.clear()
