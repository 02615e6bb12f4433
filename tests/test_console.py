"""What the ``groupbias`` command prints: dependencies' deprecation notices are silenced,
groupbias's own warnings always show, in one line on stderr."""

from __future__ import annotations

import warnings

from groupbias.cli import configure_warnings
from groupbias.errors import GroupBiasWarning


class AssumptionWarning(GroupBiasWarning):
    """A subclass, as a module of groupbias may define one."""


def _emit(category, message, module):
    warnings.warn_explicit(message, category, f"/{module.replace('.', '/')}.py", 7, module=module)


def test_dependency_notices_are_silenced_and_ours_are_not():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # a setting that shows everything
        configure_warnings()
        _emit(FutureWarning, "LeafSpec is deprecated", "pytorch_lightning.utilities._pytree")
        _emit(DeprecationWarning, "old torch api", "torch.utils._pytree")
        _emit(PendingDeprecationWarning, "hydra will change", "hydra.core.utils")
        # the same categories raised in our own code stay visible: we have to fix those
        _emit(FutureWarning, "our own future change", "groupbias.metrics")
        # a dependency's other warnings are not touched
        _emit(UserWarning, "a user warning from lightning", "pytorch_lightning.trainer")
    assert [str(w.message) for w in shown] == [
        "our own future change",
        "a user warning from lightning",
    ]


def test_our_warnings_show_as_one_line_even_where_warnings_are_ignored(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. PYTHONWARNINGS=ignore
        configure_warnings()
        warnings.warn("β̂ rests on too few affected items", GroupBiasWarning, stacklevel=1)
        warnings.warn("the KS minimum is flat", AssumptionWarning, stacklevel=1)
        warnings.warn("not ours", UserWarning, stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "groupbias: warning: β̂ rests on too few affected items",
        "groupbias: warning (AssumptionWarning): the KS minimum is flat",
    ]
