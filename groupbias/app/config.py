"""Objects from configuration, strictly.

Every config group (``dataset``, ``grouping``, ``bias``, ``estimator``, ``evaluation``,
``model``, ``loss``,
``optimizer``, ``scheduler``, ``trainer``, ``batching``, ``experiment``) is a mapping with a
``_target_`` naming the class or function that it builds, the Hydra way
(:func:`hydra.utils.instantiate`). :func:`build` adds what Hydra leaves open:

- a key the target does not take is an error naming the key (``loss.weighting_x: unknown
  key; expected one of ...``) — a key can never be silently ignored;
- a required key that is absent is an error naming it;
- an impossible value is an error naming the key: targets validate their arguments and raise
  :class:`~groupbias.core.errors.ParameterError` with the argument's name, which becomes
  ``<group>.<name>``; a third-party target (``torch.optim.Adam``) that fails some other way
  is probed one key at a time to find the key it rejects;
- for ``_partial_: true`` targets (optimizers, schedulers) a ``probe`` callable builds a
  throw-away object so that bad values fail at once, not after the data has loaded.

All errors are :class:`~groupbias.core.errors.ConfigError` (``.key`` is the full dotted key).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .._fast import BACKENDS
from ..core.errors import ConfigError, ParameterError
from ..core.validation import is_integer, real
from .resources import check_resources

__all__ = ["build", "plain", "HYDRA_KEYS"]

#: keys of a node that Hydra's instantiate reads itself
HYDRA_KEYS = ("_target_", "_partial_", "_convert_", "_recursive_", "_args_")


def plain(node) -> Any:
    """A resolved plain-Python copy of an OmegaConf node (dicts, lists, scalars)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    if isinstance(node, Mapping):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [plain(v) for v in node]
    return node


def _target(node: Mapping, key: str) -> Callable:
    from hydra.utils import get_object

    name = node.get("_target_")
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"{key}._target_", f"expected the dotted name of a class or function, got {name!r}"
        )
    try:
        return get_object(name)
    except Exception as exc:  # ImportError, AttributeError, Hydra's wrapper
        raise ConfigError(f"{key}._target_", f"cannot import {name!r} ({exc})") from None


def _signature_check(fn: Callable, kwargs: Mapping, key: str, partial: bool) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    params = sig.parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [
        n
        for n, p in params.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"
    ]
    if not var_kw:
        for k in kwargs:
            if k not in named:
                raise ConfigError(
                    f"{key}.{k}",
                    "unknown key; expected one of "
                    + ", ".join(n for n in named if n not in ("params",)),
                )
    if partial:
        return
    for n in named:
        p = params[n]
        if p.default is p.empty and n not in kwargs:
            raise ConfigError(f"{key}.{n}", "missing: this key is required")


def _rekey(exc: BaseException, key: str) -> ConfigError | None:
    """A ConfigError naming the full key for errors that name their parameter."""
    if isinstance(exc, ConfigError):
        inner = exc.key
        full = inner if inner.startswith(key + ".") else f"{key}.{inner}"
        return ConfigError(full, str(exc)[len(inner) + 2 :])
    if isinstance(exc, ParameterError):
        name = exc.name
        full = name if name.startswith(key + ".") else f"{key}.{name}"
        msg = f"expected {exc.expected}, got {exc.given!r}"
        return ConfigError(full, msg + (f". {exc.fix}" if exc.fix else ""))
    return None


def _succeeds(fn: Callable, kwargs: Mapping, probe: Callable | None, partial: bool) -> bool:
    try:
        obj = functools.partial(fn, **kwargs) if partial else fn(**kwargs)
        if probe is not None:
            probe(obj)
    except Exception:
        return False
    return True


def _culprit(fn: Callable, kwargs: Mapping, probe: Callable | None, partial: bool) -> str | None:
    """The key that makes ``fn`` (then ``probe``) fail: the first whose removal (its default
    then applies) makes the call succeed, else the first that fails on its own."""
    for k in kwargs:
        if _succeeds(fn, {j: v for j, v in kwargs.items() if j != k}, probe, partial):
            return k
    for k, v in kwargs.items():
        try:
            obj = functools.partial(fn, **{k: v}) if partial else fn(**{k: v})
            if probe is not None:
                probe(obj)
        except TypeError as exc:
            if "required" in str(exc) and "argument" in str(exc):
                continue  # needs other keys too: cannot judge this one alone
            return k
        except Exception:
            return k
    return None


def build(node, key: str, *, probe: Callable[[Any], Any] | None = None):
    """Instantiate the config ``node`` of group ``key`` strictly (see module docstring).

    ``probe(obj)``: an optional check run on the built object (for ``_partial_`` targets, a
    call that builds a throw-away instance); its failure is reported against the key that
    causes it.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    cfg = plain(node)
    if not isinstance(cfg, Mapping):
        raise ConfigError(key, f"expected a mapping with a _target_, got {cfg!r}")
    if "_target_" not in cfg and cfg:
        first = next(iter(cfg))
        raise ConfigError(
            f"{key}.{first}",
            "unknown key: this option of the group takes no keys (or give a _target_)",
        )
    fn = _target(cfg, key)
    kwargs = {k: v for k, v in cfg.items() if k not in HYDRA_KEYS}
    partial = bool(cfg.get("_partial_", False))
    _signature_check(fn, kwargs, key, partial)
    try:
        # one level at a time: nested _target_ mappings are built (strictly) by their owner
        # the options in the node itself: as instantiate's keyword arguments they would be
        # merged into the node by OmegaConf, a quarter of the call's time
        obj = instantiate({**cfg, "_convert_": "all", "_recursive_": False})
        if probe is not None:
            probe(obj)
        return obj
    except Exception as exc:
        cause = (
            exc.__cause__
            if isinstance(exc, InstantiationException) and exc.__cause__ is not None
            else exc
        )
        err = _rekey(cause, key)
        if err is not None:
            raise err from None
        bad = _culprit(fn, kwargs, probe, partial)
        where = f"{key}.{bad}" if bad else key
        raise ConfigError(where, f"rejected by {cfg['_target_']}: {cause}") from None


# --------------------------------------------------------------------------- a whole run

#: the config groups, in the order they are built
CONFIG_GROUPS = (
    "dataset",
    "grouping",
    "bias",
    "estimator",
    "diagnostics",
    "evaluation",
    "model",
    "loss",
    "optimizer",
    "scheduler",
    "trainer",
    "batching",
    "experiment",
)
#: the groups that describe the ranker (built only for an experiment that trains one)
RANKER_GROUPS = ("model", "loss", "optimizer", "scheduler", "trainer", "batching")
#: top-level keys beside the groups
TOP_KEYS = (
    "seed",
    "backend",
    "progress",
    "warn_after_s",
    "verbose",
    "paths",
    "plugins",
    "hydra",
)


#: ``warn_after_s`` when a config has none (a few minutes)
DEFAULT_WARN_AFTER_S = 180.0
#: the evaluation group when a config has none (deterministic evaluation)
_DETERMINISTIC = {"_target_": "groupbias.evaluation.protocol.EvaluationProtocol"}


def _probe_optimizer(factory) -> None:
    import torch

    factory([torch.nn.Parameter(torch.zeros(1))])


def _probe_scheduler(factory) -> None:
    """Build the scheduler on a throw-away optimizer and step it a dozen epochs (most
    schedulers read their settings only when stepping)."""
    import torch

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = factory(opt)
    plateau = isinstance(sched, torch.optim.lr_scheduler.ReduceLROnPlateau)
    for _ in range(12):
        opt.step()
        if plateau:
            sched.step(0.0)
        else:
            sched.step()


def _check_top(cfg: Mapping) -> tuple[int, bool, str]:
    for k in cfg:
        if k not in CONFIG_GROUPS and k not in TOP_KEYS:
            raise ConfigError(
                str(k), "unknown key; expected one of " + ", ".join(CONFIG_GROUPS + TOP_KEYS)
            )
    seed = cfg.get("seed", 0)
    if not is_integer(seed) or seed < 0:
        raise ConfigError("seed", f"expected an integer >= 0, got {seed!r}")
    for flag in ("progress", "verbose"):
        if not isinstance(cfg.get(flag, False), bool):
            raise ConfigError(flag, f"expected true or false, got {cfg[flag]!r}")
    progress = cfg.get("progress", True)
    backend = cfg.get("backend", "auto")
    if backend not in BACKENDS:
        raise ConfigError("backend", f"expected one of {', '.join(BACKENDS)}, got {backend!r}")
    paths = cfg.get("paths") or {}
    if not isinstance(paths, Mapping) or set(paths) - {"runs"}:
        raise ConfigError("paths", f"expected a mapping with the key runs, got {paths!r}")
    if not isinstance(paths.get("runs", "runs"), str):
        raise ConfigError("paths.runs", f"expected a folder (string), got {paths['runs']!r}")
    return seed, progress, backend


def _warn_after(cfg: Mapping) -> float | None:
    """``warn_after_s``: seconds of estimated training above which a run warns before it
    trains (:mod:`groupbias.ltr.training_time`); null: never."""
    value = cfg.get("warn_after_s", DEFAULT_WARN_AFTER_S)
    if value is None:
        return None
    try:
        return real("warn_after_s", value, low=0.0, what="seconds >= 0 (null: never warn)")
    except ParameterError as exc:
        raise ConfigError("warn_after_s", f"expected {exc.expected}, got {value!r}") from None


def import_plugins(modules) -> None:
    """Import the modules named in the ``plugins`` key, first: they register datasets,
    estimators and metrics that the config groups then refer to by name."""
    import importlib

    if isinstance(modules, (str, Mapping)) or not isinstance(modules, (list, tuple)):
        raise ConfigError("plugins", f"expected a list of module names, got {modules!r}")
    for i, name in enumerate(modules):
        try:
            importlib.import_module(str(name))
        except ImportError as exc:
            raise ConfigError(
                f"plugins[{i}]",
                f"cannot import {name!r} ({exc})",
                hint="put the module on PYTHONPATH",
            ) from None


def _recipe(cfg: Mapping):
    from ..ltr.train import RankerRecipe

    sched = cfg.get("scheduler")
    return RankerRecipe(
        model=build(cfg.get("model"), "model"),
        loss=build(cfg.get("loss"), "loss"),
        optimizer=build(cfg.get("optimizer"), "optimizer", probe=_probe_optimizer),
        scheduler=None if not sched else build(sched, "scheduler", probe=_probe_scheduler),
        trainer=build(cfg.get("trainer"), "trainer"),
        batching=build(cfg.get("batching"), "batching"),
    )


def _unused_policy_keys(node: Mapping, protocol) -> None:
    """Refuse policy settings (``evaluation.learn=true``, ...) given to the deterministic
    protocol, which never reads them."""
    from ..evaluation.protocol import POLICY_KEYS

    if getattr(protocol, "mode", None) != "deterministic":
        return
    for key in POLICY_KEYS:
        if node.get(key) is not None:
            raise ConfigError(
                f"evaluation.{key}",
                "unused: evaluation=deterministic judges the scores themselves; this key "
                "sets the Plackett–Luce policy of evaluation=policy",
                hint="choose evaluation=policy (or paper_code), or drop the key",
            )


def _unused_ranker_keys(experiment, overridden) -> None:
    """Refuse command-line keys of the ranker groups for an experiment that trains none."""
    for key in overridden:
        if key.split(".")[0] in RANKER_GROUPS:
            name = getattr(experiment, "name", type(experiment).__name__)
            raise ConfigError(
                key,
                f"unused: experiment {name!r} trains no ranker",
                hint="drop it, or choose an experiment that trains one (table2, impact, demo)",
            )


def _is_key(key: str, under: str) -> bool:
    return key == under or key.startswith((under + ".", under + "["))


def _data_keys(experiment, dataset, chosen: bool, overridden) -> None:
    """The data a run reads is named in one place. ``dataset=<name>`` on the command line
    (``chosen``) replaces an experiment's list (its ``dataset_list``): the list's key given
    too is refused. Otherwise a ``dataset.*`` or ``grouping`` key sets the composed dataset,
    which the run reads only where every entry of the list is plainly that dataset (the
    entries are then replaced by it); elsewhere the key is refused, never silently ignored
    or applied to other data than the list names."""
    listed = getattr(experiment, "dataset_list", None)
    keys = [k for k in overridden if _is_key(k, "dataset") or _is_key(k, "grouping")]
    if listed is None or not keys:
        return
    key, names = listed
    name = getattr(experiment, "name", type(experiment).__name__)
    if "dataset" in overridden and chosen:
        both = next((k for k in overridden if _is_key(k, key)), None)
        if both is not None:
            raise ConfigError(
                both,
                f"unused: dataset={dataset.name} on the command line replaces {key} of "
                f"experiment {name!r}",
                hint=f"drop one of them: dataset=<name> runs that dataset, {key}=... the list",
            )
        return
    if chosen and all(plain and n == dataset.name for n, plain in names):
        return
    other = next((n for n, plain in names if not (plain and n == dataset.name)), names[0][0])
    entry = f"set it in the entry of {key} ({{dataset: {other}, params: ..., grouping: ...}})"
    if key == "experiment.setups":
        entry = f"list the datasets (experiment.setups=listed experiment.datasets=[{other}])"
    raise ConfigError(
        keys[0],
        f"unused: it applies to the composed dataset ({dataset.name}), and experiment "
        f"{name!r} reads {key} ({', '.join(n for n, _ in names)})",
        hint=f"choose the dataset too (dataset={other} {keys[0]}=...), or {entry}",
    )


def _unused_dependent_keys(built: Mapping[str, Any], overridden) -> None:
    """One rule for keys that take effect only under another option: a built object's
    ``DEPENDENT_KEYS`` (key -> (option, the option's values that use the key; None: any value
    but 0)). Such a key set on the command line while its option does not use it is refused
    naming that option (``estimator.bias_boot`` without ``estimator.bias_correction=
    bootstrap``), never accepted and ignored."""
    for key in overridden:
        group, _, rest = key.partition(".")
        obj = built.get(group)
        leaf = rest.split(".")[0].split("[")[0]
        option, values = (getattr(obj, "DEPENDENT_KEYS", None) or {}).get(leaf, (None, None))
        if option is None:
            continue
        value = getattr(obj, option)
        if (value in values) if values is not None else bool(value):
            continue
        want = f"={'|'.join(values)}" if values is not None else " other than 0"
        raise ConfigError(
            key,
            f"unused: it takes effect only with {group}.{option}{want} (here {value!r})",
            hint=f"set {group}.{option} too, or drop {key}",
        )


def build_setup(cfg, *, data_from_command_line: bool = False, overridden=()):
    """Every object of a composed run config: ``(setup, experiment)``.

    Raises :class:`ConfigError` naming the first key that is unknown, missing or invalid;
    nothing is loaded or trained before every group has been built. The ranker groups
    (:data:`RANKER_GROUPS`) are built only when the experiment trains a ranker (its
    ``trains_ranker`` attribute, true unless an experiment says otherwise); otherwise
    ``setup.recipe`` is None, torch is never imported, and a key of those groups given on the
    command line (``overridden``: the keys of the command-line overrides) is refused as unused.
    ``progress`` (top level, default true): policy evaluation prints how far each learned
    policy is, and Lightning shows its bars (on a terminal); ``progress=false`` silences both.
    """
    from .setup import Setup

    c = plain(cfg)
    if not isinstance(c, Mapping):
        raise ConfigError("<config>", "expected a mapping")
    seed, progress, backend = _check_top(c)
    import_plugins(c.get("plugins") or [])
    groups = {
        key: build(c.get(key), key)
        for key in ("dataset", "grouping", "bias", "estimator", "diagnostics")
    }
    groups["evaluation"] = build(c.get("evaluation") or _DETERMINISTIC, "evaluation")
    _unused_policy_keys(c.get("evaluation") or {}, groups["evaluation"])
    experiment = build(c.get("experiment"), "experiment")
    _data_keys(experiment, groups["dataset"], data_from_command_line, overridden)
    _unused_dependent_keys({**groups, "experiment": experiment}, overridden)
    trains = bool(getattr(experiment, "trains_ranker", True))
    if not trains:
        _unused_ranker_keys(experiment, overridden)
    groups["evaluation"].progress = progress  # how far each learned policy is
    recipe = _recipe(c) if trains else None
    if recipe is not None and not progress:  # progress=false: no Lightning bars either
        recipe = replace(recipe, trainer=replace(recipe.trainer, enable_progress_bar=False))
    setup = Setup(
        seed=seed,
        progress=progress,
        warn_after_s=_warn_after(c),
        backend=backend,
        recipe=recipe,
        data_from_command_line=data_from_command_line,
        **groups,
    )
    check_resources(c, trains=trains, warn_after_s=setup.warn_after_s)
    check = getattr(experiment, "check", None)
    if check is not None:
        try:
            check(setup)
        except Exception as exc:
            err = _rekey(exc, "experiment")
            if err is None:
                raise
            raise err from None
    return setup, experiment
