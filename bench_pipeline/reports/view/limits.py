"""How much of one kind the reports list before they count the rest."""

from __future__ import annotations

#: Items of one kind a report lists before it counts the rest.
LIST_CAP = 25
#: Attempt cells per task in the task table's strip.
STRIP_CAP = 50
#: Slowest / most expensive tasks listed.
TOP_N = 10
