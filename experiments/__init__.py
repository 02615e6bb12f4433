"""One module per paper artifact; each exposes ``run(cfg, run_dir) -> {"records": [...]}``
and optionally ``present(cfg, metrics, run_dir)`` (print tables, draw figures)."""
