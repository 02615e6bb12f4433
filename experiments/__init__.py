"""One module per paper artifact. Each defines the settings class that its config names as
``experiment._target_`` (``configs/experiment/<name>.yaml``); the class validates its
settings when built and has ``run(setup, rd) -> {"records": [...]}`` and ``present(setup,
metrics, run_dir)`` (print tables, draw figures)."""
