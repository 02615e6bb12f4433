"""groupbias: group membership bias in unbiased learning to rank.

Data flows one way: load (``data_loaders``) -> group -> simulate -> estimate -> correct ->
train/evaluate -> report.
"""

__version__ = "0.1.0"
