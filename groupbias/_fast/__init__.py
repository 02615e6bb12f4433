"""Private: the fast paths of groupbias, behind one seam.

Every compiled loop, thread fan-out and choice between a numpy pass and a compiled one
lives here, one dispatcher per primitive; the method's code (metrics, exposure, the
estimator, the sampler, the click simulator, the loaders) calls the dispatcher and never
sees loops, blocks or threads. The choice depends on the call's input and on one knob,
:func:`backend` (``auto | numpy | numba``: the ``backend`` config key or the
``GROUPBIAS_BACKEND`` environment variable), never on what ran before in the process.

Paths agree within the equality contract of ``docs/reliability.md``: integers and tie-free
orders exactly, floats within a stated tolerance per output; the same path on the same
machine gives the same bits.
"""

from .backend import BACKENDS, ENV_VAR, backend, compiled, use_backend

__all__ = ["BACKENDS", "ENV_VAR", "backend", "compiled", "use_backend"]
