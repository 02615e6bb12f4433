"""The two regimes of the paper (§3.1): tabular search for head queries and a general LTR
model for tail queries. Each pipeline composes simulate -> estimate -> correct -> evaluate
and returns tidy result records (see :mod:`groupbias.reporting`)."""
