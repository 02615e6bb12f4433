"""Loaders for the datasets of the group-membership-bias paper; all return
:class:`groupbias.RankingData`.

Loaders depend on :mod:`groupbias` (the core type and the error hierarchy), never the reverse.
No torch here: loaders produce flat numpy arrays plus query offsets.
"""
