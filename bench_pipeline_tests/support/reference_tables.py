"""Tables of the metrics reference that tests of several modules check against."""

# Reference 2, "Example / Status / Class / Raw success / Eligible".
OUTCOME_TABLE = [
    ("passed", None, True, True),
    ("failed", "agent", False, True),
    ("timeout", "agent", False, True),
    ("timeout", "unknown", None, False),
    ("failed", "unknown", False, True),
    ("failed", "unknown", None, False),
    ("skipped", "skipped", None, False),
    ("failed", "environment", False, False),
    ("judge_error", "evaluation", None, False),
]
