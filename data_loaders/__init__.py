"""Loaders for the datasets of the group-membership-bias paper; all return :class:`RankingData`.

No torch here: loaders produce flat numpy arrays plus query offsets.
"""

from .errors import DataError, DataFormatError, GroupingError, MissingFilesError
from .ranking_data import QueryView, RankingData

__all__ = ["DataError", "DataFormatError", "GroupingError", "MissingFilesError",
           "QueryView", "RankingData"]
