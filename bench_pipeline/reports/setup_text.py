"""The measurement setup in the reports' words (comparison.md "The measurement setup":
"comparison.md explains each [warning] in words, at the top (a comparison across judges or
devices mixes that change with the agent's)"; repeated-runs.md "Systems").

The top of every comparison (comparison.md in both forms, the "Compared with" section of
summary.md and report.html) names each run's suite version, judge, platform and active skills
next to its model and code, and states every difference in words; repeats.md names what its
runs were measured with. Pure functions of ``setup.Setup`` values; strings from the runs stay
raw, to be escaped where they are rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..repeats import RepeatRun
from ..setup import Setup, differs_among


def setup_words(setup: Setup) -> str:
    """``suite version 7; judge j; platform d / os; active skills a, b``; what no manifest
    records is said once."""
    if setup == Setup():
        return "nothing recorded (no suite version, judge, platform or active skills in manifest.json)"
    platform = setup.platform_text if setup.platform_text == "platform unknown" else f"platform {setup.platform_text}"
    return (f"suite version {setup.suite_version_text}; {setup.judge_text}; {platform}; "
            f"active skills {setup.skills_text}")


def setup_rows(b: Setup, c: Setup) -> list[dict[str, Any]]:
    """Rows of the "What is compared" table: suite version, judge, platform, active skills,
    each flagged when its part differs (the warnings' test)."""
    differ = set(differs_among((b, c)))
    return [
        {"label": "Suite version", "baseline": b.suite_version_text, "candidate": c.suite_version_text,
         "differs": "suite_version_differs" in differ},
        {"label": "Judge", "baseline": b.judge_text, "candidate": c.judge_text, "differs": "judge_differs" in differ},
        {"label": "Platform", "baseline": b.platform_text, "candidate": c.platform_text,
         "differs": "platform_differs" in differ},
        {"label": "Active skills", "baseline": b.skills_text, "candidate": c.skills_text,
         "differs": "skills_differs" in differ},
    ]


def _skills_change(b: Setup, c: Setup) -> str:
    only_b = sorted((b.skills or frozenset()) - (c.skills or frozenset()))
    only_c = sorted((c.skills or frozenset()) - (b.skills or frozenset()))
    parts = [f"only the {which}'s: {', '.join(names)}" for which, names in (("baseline", only_b), ("candidate", only_c))
             if names]
    return "; ".join(parts)


def difference_sentences(b: Setup, c: Setup, b_name: str = "baseline", c_name: str = "candidate") -> dict[str, str]:
    """{warning code: the difference in words} for every setup part that differs."""
    texts = {
        "suite_version_differs": (f"The suite versions differ ({b.suite_version_text} and {c.suite_version_text}): "
                                  "a task with the same id may not be the same task."),
        "judge_differs": (f"The judges differ ({b.judge_text} for the {b_name}, {c.judge_text} for the {c_name}): a "
                          "comparison across judges mixes the change of judge with the agent's, since a task may pass "
                          "or fail because it was judged differently."),
        "platform_differs": (f"The platforms differ ({b.platform_text} for the {b_name}, {c.platform_text} for the "
                             f"{c_name}): a comparison across devices or OS versions mixes that change with the "
                             "agent's."),
        "skills_differs": (f"The active skills differ ({_skills_change(b, c)}): the agent could use different skills, "
                           "so part of any change may be the skills'."),
    }
    return {code: texts[code] for code in differs_among((b, c))}


def setup_facts(b: Setup, c: Setup) -> dict[str, str]:
    """The values comparison.md's warning texts name (compared.WARNING_TEXT)."""
    return {"b_version": b.suite_version_text, "c_version": c.suite_version_text,
            "b_judge": b.judge_text, "c_judge": c.judge_text,
            "b_platform": b.platform_text, "c_platform": c.platform_text,
            "skills_change": _skills_change(b, c)}


#: comparison.md's setup warnings in words (filled with ``setup_facts``).
SETUP_WARNING_TEXT = {
    "suite_version_differs": "The suite versions differ ({b_version} and {c_version}): a task with the same id may "
                             "not be the same task.",
    "judge_differs": "The runs were judged differently ({b_judge} and {c_judge}): the comparison mixes the change of "
                     "judge with the agent's.",
    "platform_differs": "The runs ran on different platforms ({b_platform} and {c_platform}): the comparison mixes "
                        "the change of device or OS with the agent's.",
    "skills_differs": "The active skills differ ({skills_change}): part of any change may be the skills'.",
}


def _groups(runs: Sequence[RepeatRun]) -> list[tuple[Setup, list[str]]]:
    groups: dict[Setup, list[str]] = {}
    for run in runs:
        groups.setdefault(run.side.identity.setup, []).append(str(run.run_id))
    return list(groups.items())


def runs_setup_lines(runs: Sequence[RepeatRun], what: str = "The runs") -> list[str]:
    """What a set of runs was measured with: one line when all share it, else one per setup
    with its runs."""
    groups = _groups(runs)
    if len(groups) <= 1:
        return [f"{what} were measured with: {setup_words(groups[0][0])}."] if groups else []
    return [f"{', '.join(ids)} measured with: {setup_words(setup)}." for setup, ids in groups]


#: The setup warnings (comparison.md "The measurement setup") and the part each names, plural.
SETUP_PARTS = {"suite_version_differs": "suite versions", "judge_differs": "judges",
               "platform_differs": "platforms", "skills_differs": "active skills"}


def setup_note(warnings: Sequence[str]) -> str:
    """A comparison's setup warnings in a few words for a table cell ('' without any):
    ``measured another way than its baseline: the judges and platforms differ``."""
    parts = [SETUP_PARTS[code] for code in warnings if code in SETUP_PARTS]
    if not parts:
        return ""
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"measured another way than its baseline: the {listed} differ"


def set_setup_lines(baseline: Sequence[RepeatRun], candidate: Sequence[RepeatRun]) -> list[str]:
    """The top of the repeated comparison: each side's setup, then every difference between
    the sides in words (and within a side, which the warnings name)."""
    lines = [*runs_setup_lines(baseline, "The baseline's runs"), *runs_setup_lines(candidate, "The candidate's runs")]
    b_groups, c_groups = _groups(baseline), _groups(candidate)
    if len(b_groups) == 1 and len(c_groups) == 1:
        lines += list(difference_sentences(b_groups[0][0], c_groups[0][0]).values())
    else:
        every = [s for s, _ in b_groups + c_groups]
        differ = [SETUP_PARTS[code] for code in differs_among(every)]
        if differ:
            lines.append(f"The runs differ in their {', '.join(differ)}: the pooled values mix those changes with the "
                         "agent's (a comparison across judges or devices measures both at once).")
    return lines
