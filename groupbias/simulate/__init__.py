"""Simulation: group-biased attractiveness (β_q per query, the ``bias`` config group), click
logs under position and group bias, and datasets moved to a given merit ratio."""

from .clicks import ClickLog, UserModel, simulate_click_log
from .group_bias import GroupBias, Simulation, relevance_from_labels, simulate_group_bias

__all__ = [
    "ClickLog",
    "GroupBias",
    "Simulation",
    "UserModel",
    "relevance_from_labels",
    "simulate_click_log",
    "simulate_group_bias",
]
