"""One module per paper artifact. Each defines the settings class that its config names as
``experiment._target_`` (``configs/experiment/<name>.yaml``); the class validates its
settings when built and has ``run(setup, run_dir) -> {"records": [...]}`` (``run_dir``: the
run's :class:`~groupbias.app.runs.RunDir`) and ``present(setup, metrics, run_dir)`` (its
folder: print tables, draw figures)."""
