"""The maintainers' tools beside the paper's artifacts: the command that regenerates and
checks every documented table (``python -m tools.docs_tables``) and the analyses behind
some of them (``eel_scale``, ``neutrality_grid``, ``fair_qr_rerank``). Not shipped in the
wheel; nothing in ``groupbias/``, ``data_loaders/`` or ``experiments/`` imports them."""
