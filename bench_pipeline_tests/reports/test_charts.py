"""reports/charts.py and reports/histogram.py: the inline SVG charts and report.html's
histograms, on values in memory (their bins alone: test_histogram_bins.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_pipeline import reports
from bench_pipeline.reports.charts import nice_step, svg_stacked_bar
from bench_pipeline.reports.histogram import histograms, place_labels, text_width
from bench_pipeline.stats import percentile
from bench_pipeline_tests.support.svg import SVG, assert_marker_labels_apart, bar_counts, intersect, svg_tree, text_box, texts


def test_svg_builders_escape_labels() -> None:
    bar = str(reports.svg_interval_bar(0.5, 0.2, 0.8, label="<x>"))
    assert '<rect class="ci"' in bar and '<circle class="pt"' in bar and "&lt;x&gt;" in bar and "<x>" not in bar
    assert "n/a" in str(reports.svg_interval_bar(None, None, None))
    chart = str(reports.svg_hbar_chart([("a<b", 3), ("zero", 0)]))
    assert "a&lt;b" in chart and chart.count('class="bar"') == 1
    hist = str(reports.svg_histogram([1000.0, 2000.0, 2500.0], "task_wall_ms", markers={"p50": 2000.0}))
    assert hist.count('class="bar"') >= 2 and "p50 2.0 s" in hist
    assert "n/a" in str(reports.svg_histogram([], "task_wall_ms"))


#: 32 attempts between 20 and 30 s and one 600 s timeout (the real run's wall times)
LONG_TAIL_MS = [20_000.0 + (i * 7_919) % 10_000 for i in range(32)] + [600_000.0]


def test_a_long_tail_is_cut_from_the_axis_and_counted_beside_it() -> None:
    data = sorted(LONG_TAIL_MS)
    # why the former rule (values above the p99 folded away when max > 1.5 x p99, 50 values
    # or more) never fired: with 33 values the interpolated p99 lies in the gap to the timeout
    assert percentile(data, 99) > 400_000 and not 600_000 > 1.5 * percentile(data, 99)
    h = reports.histogram_bins(LONG_TAIL_MS)
    assert h.scale == "linear" and (h.below, h.above, h.high) == (0, 1, 600_000)
    assert h.above_threshold == 30_000 and h.bins[0][0] == 20_000 and h.count == 33
    assert max(c for *_, c in h.bins) / 33 < 0.2  # was 32 of 33 in one bar

    p50, p90 = percentile(data, 50), percentile(data, 90)
    root = svg_tree(reports.svg_histogram(LONG_TAIL_MS, "task_wall_ms", markers={"p50": p50, "p90": p90}))
    assert root.get("data-scale") == "linear"
    counts = bar_counts(root)
    assert sum(counts) == 32 and max(counts) / 33 < 0.9 and len([c for c in counts if c]) >= 10
    assert bar_counts(root, "bar over") == [1]
    caption = " ".join(t.text for t in texts(root, "caption"))
    assert "linear scale cut at 30.0 s" in caption and "+1 attempt above 30.0 s, max 10.0 min" in caption
    assert "linear scale cut at 30.0 s" in root.get("aria-label") and root.find(f"{SVG}title") is not None
    labels = texts(root, "mlabel")
    assert [t.text for t in labels] == ["p50 25.4 s", "p90 29.1 s"]
    assert_marker_labels_apart(root)


@pytest.mark.parametrize(("values", "field", "markers"), [
    (LONG_TAIL_MS, "task_wall_ms", {"p50": 24_830.0, "p90": 25_100.0}),  # close markers
    (LONG_TAIL_MS, "task_wall_ms", {"p50": 20_000.0, "p90": 20_400.0}),  # close, at the left end
    (LONG_TAIL_MS, "task_wall_ms", {"p50": 29_900.0, "p90": 600_000.0}),  # one on the outliers' bar
    ([0.0] * 85 + [1000.0] * 3 + [2000.0] * 3 + [3000, 4000, 5000, 6000, 20000, 30000, 40000, 45000, 50000],
     "total_tokens", {"p50": 0.0, "p90": 2000.0}),
    ([0] * 10, "tool_calls", {"p50": 0, "p90": 0}),
    ([7] * 5, "tool_calls", {"p50": 7, "p90": 7, "p95": 7, "max": 7}),
    ([1e300, 1e-300, 5.0], "total_tokens", {"p50": 5.0, "p90": 1e300}),
])
def test_marker_labels_never_overlap(values: list, field: str, markers: dict) -> None:
    root = svg_tree(reports.svg_histogram(values, field, markers=markers))
    boxes = assert_marker_labels_apart(root)
    assert len(boxes) == len(markers)
    # every text of the chart (axis, counts, caption, markers) stays apart, too
    all_boxes = [text_box(t) for t in root.iter(f"{SVG}text")]
    assert not [(a, b) for i, a in enumerate(all_boxes) for b in all_boxes[i + 1:] if intersect(a, b)]


def test_close_markers_at_the_axis_end_stack_their_labels() -> None:
    values = [0.0] * 85 + [1000.0] * 3 + [2000.0] * 3 + [3000, 4000, 5000, 6000, 20000, 30000, 40000, 45000, 50000]
    root = svg_tree(reports.svg_histogram(values, "total_tokens", markers={"p50": 1000.0, "p90": 2000.0}))
    p50, p90 = texts(root, "mlabel")
    lines = [ln for ln in root.iter(f"{SVG}line") if "marker" in ln.get("class")]
    x50, x90 = (float(ln.get("x1")) for ln in lines)
    assert x50 < x90 < x50 + 20  # too close, and too near the left end for "p50 1,000" to go left of its line
    # the two labels sit in rows of their own, each line rising to its own label: p50's
    # above, so that p90's line does not cross it
    assert float(p50.get("y")) <= float(p90.get("y")) - 13
    for line, label in zip(lines, (p50, p90)):
        assert float(line.get("y1")) < float(label.get("y"))
    x0, x1, *_ = text_box(p90)
    assert not x0 <= x50 <= x1  # p50's line rises past p90's row beside its label
    assert_marker_labels_apart(root)
    # with n labels at one place, n rows
    placed = place_labels([(50.0, 60.0, True), (52.0, 60.0, False), (54.0, 60.0, False)], 560)
    assert len({row for _, row in placed}) == 3


def test_positive_values_over_orders_of_magnitude_get_a_log_axis() -> None:
    import random

    rng = random.Random(3)
    values = [round(rng.lognormvariate(10, 1.2)) for _ in range(10_000)]
    h = reports.histogram_bins(values)
    assert h.scale == "log" and h.count == 10_000 and h.below == h.above == 0
    widths = {round(math.log10(hi) - math.log10(lo), 9) for lo, hi, _ in h.bins}
    assert widths == {h.log_step} and len(h.bins) <= 20
    assert max(c for *_, c in h.bins) / 10_000 < 0.25
    root = svg_tree(reports.svg_histogram(values, "total_tokens",
                                          markers={"p50": percentile(sorted(values), 50), "p90": percentile(sorted(values), 90)}))
    assert root.get("data-scale") == "log"
    assert "log scale" in " ".join(t.text for t in texts(root, "caption"))
    ticks = [t.text for t in texts(root, "axis")]
    assert {"1k", "10k", "100k"} <= set(ticks)
    assert_marker_labels_apart(root)
    # the same input gives the same chart
    assert str(reports.svg_histogram(values, "total_tokens")) == str(reports.svg_histogram(list(values), "total_tokens"))
    # a uniform spread over two orders of magnitude stays linear (half of it is not crowded low)
    assert reports.histogram_bins([float(v) for v in range(1, 200)]).scale == "linear"


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.lists(st.one_of(st.floats(-1e7, 1e7), st.integers(0, 400), st.sampled_from([0.0, 600_000.0])),
                         min_size=1, max_size=60),
                st.lists(st.floats(1e-3, 1e9), min_size=1, max_size=60)),
       st.lists(st.floats(-1e7, 1e7), min_size=0, max_size=4),
       st.sampled_from(["task_wall_ms", "total_tokens", "tool_calls", "cost_usd"]))
def test_no_two_texts_of_a_histogram_overlap(values: list, extra: list, field: str) -> None:
    data = sorted(float(v) for v in values)
    markers = {"p50": percentile(data, 50), "p90": percentile(data, 90)} | {f"m{i}": v for i, v in enumerate(extra)}
    root = svg_tree(reports.svg_histogram(values, field, markers=markers))
    assert_marker_labels_apart(root)
    boxes = [text_box(t) for t in root.iter(f"{SVG}text")]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if intersect(a, b)]
    assert reports.histogram_bins(values).count == len(values)


@pytest.mark.parametrize(("values", "bars", "total"), [
    ([0, 0, 0], 1, 3),
    ([0.0] * 10, 1, 10),
    ([5.5] * 3, 1, 3),
    ([None, 2.0, None, 4.0, float("nan"), True], 3, 2),  # nulls, NaN and booleans are no values
    ([-5, -3, -1, 0, 2], 8, 5),
    ([-40_000.0, -1_000.0, 0.0, 2_500.0, 1e6], None, 5),
    ([2 ** 60, 2 ** 61, 5], None, 3),
])
def test_histograms_of_odd_values(values: list, bars: int | None, total: int) -> None:
    h = reports.histogram_bins(values)
    assert h.count == total
    if bars is not None:
        assert len(h.bins) == bars
    root = svg_tree(reports.svg_histogram(values, "task_wall_ms", markers={"p50": 0, "p90": None}))
    assert sum(bar_counts(root)) + sum(bar_counts(root, "bar over")) == total
    assert "scale" in " ".join(t.text for t in texts(root, "caption"))
    assert [t.text.split()[0] for t in texts(root, "mlabel")] == ["p50"]  # the null marker is left out


def test_a_low_outlier_is_counted_below_the_axis() -> None:
    h = reports.histogram_bins(LONG_TAIL_MS + [200.0])
    assert (h.below, h.below_threshold, h.low) == (1, 20_000, 200) and h.above == 1
    root = svg_tree(reports.svg_histogram(LONG_TAIL_MS + [200.0], "task_wall_ms"))
    caption = " ".join(t.text for t in texts(root, "caption"))
    assert "+1 attempt below 20.0 s, min 200 ms" in caption and "+1 attempt above 30.0 s" in caption


def _delta_rows(**wall: object) -> list[dict]:
    signed = lambda v: "n/a" if v is None else f"{v:+,.0f} ms"  # noqa: E731
    return [
        {"label": "First attempt", "delta": -0.2, "lower": -0.35, "upper": -0.05, "scale": "rate",
         "fmt": lambda v: f"{v * 100:+.1f} pp", "css": "bad", "verdict_text": "regression"},
        {"label": "Task wall time", "delta": 600.0, "lower": 600.0, "upper": 600.0, "scale": "ms", "fmt": signed,
         "css": "bad", "verdict_text": "regression", **wall},
        {"label": "Cost (USD)", "delta": 0.01, "lower": None, "upper": None, "scale": "usd",
         "fmt": lambda v: f"{v:+.4f}", "css": "na", "verdict_text": "n/a"},
    ]


def test_a_change_without_variation_is_a_hollow_dot_not_an_interval() -> None:
    root = svg_tree(reports.svg_delta_intervals(_delta_rows(no_variation=True)))
    rows = [g for g in root.iter(f"{SVG}g") if "row" in g.get("class").split()]
    first, wall, cost = rows
    assert first.find(f"{SVG}rect[@class='ci']") is not None
    assert wall.find(f"{SVG}rect") is None  # no zero-width interval
    dot = wall.find(f"{SVG}circle")
    assert dot.get("class") == "pt nv" and "no variation to estimate an interval from" in dot.find(f"{SVG}title").text
    assert "change +600 ms" in dot.find(f"{SVG}title").text
    note = [t for t in wall.iter(f"{SVG}text") if "nv" in t.get("class", "").split()]
    assert [t.text for t in note] == ["no variation to estimate an interval from"]
    assert "no 95% interval" in wall.find(f"{SVG}title").text and "[" not in wall.find(f"{SVG}title").text
    # the note stays on the track (its end away from the dot) and clear of the dot
    x0, x1, y0, y1 = text_box(note[0], 11.0)
    track = wall.find(f"{SVG}line")
    assert float(track.get("x1")) <= x0 and x1 <= float(track.get("x2"))
    assert y1 <= float(dot.get("cy")) - 5
    # a row without an interval keeps its plain dot and "no interval"
    assert cost.find(f"{SVG}rect") is None and cost.find(f"{SVG}circle").get("class") == "pt"
    assert "no interval" in [t.text for t in cost.iter(f"{SVG}text")]


def test_each_rows_axis_range_is_labelled_as_the_axis() -> None:
    """The text at a row's right end is the axis it is drawn on (a column headed "axis range"),
    its end written without trailing zeros and said in full in its title, never "±0.0 pp"-like
    interval text; a row without a change has none."""
    rows = _delta_rows()
    rows.append({"label": "Quality score", "delta": 0.1, "lower": -0.05, "upper": 0.25, "scale": "score",
                 "fmt": lambda v: f"{v:+.3f}", "css": "flat", "verdict_text": "no significant change"})
    rows.append({"label": "Tokens", "delta": None, "lower": None, "upper": None, "scale": "tokens",
                 "fmt": lambda v: "n/a" if v is None else f"{v:+,.1f}", "css": "na", "verdict_text": "n/a"})
    root = svg_tree(reports.svg_delta_intervals(rows))
    assert [t.text for t in texts(root, "head")] == ["axis range"]
    ranges = texts(root, "range")
    # the rates' 0.35 at most -> a 0.5 axis (+50.0 pp); 600 ms -> 1,000 ms; $0.01 -> 0.02; 0.25 -> 0.5
    assert [t.text for t in ranges] == ["±50 pp", "±1,000 ms", "±0.02", "±0.5"]
    assert ranges[0].find(f"{SVG}title").text == (
        "the axis of this row runs from -50 pp to +50 pp (the 95% interval is the bar)")
    head, first = texts(root, "head")[0], ranges[0]
    assert head.get("x") == first.get("x") and float(head.get("y")) < float(first.get("y"))


@pytest.mark.parametrize("wall", [{}, {"no_variation": False}])
def test_rows_without_no_variation_draw_their_interval(wall: dict) -> None:
    root = svg_tree(reports.svg_delta_intervals(_delta_rows(**wall)))
    wall_row = [g for g in root.iter(f"{SVG}g") if "row" in g.get("class").split()][1]
    assert wall_row.find(f"{SVG}rect").get("class") == "ci" and wall_row.find(f"{SVG}circle").get("class") == "pt"
    assert "95% interval [+600 ms, +600 ms]" in wall_row.find(f"{SVG}title").text
    assert "no variation" not in str(reports.svg_delta_intervals(_delta_rows(**wall)))


def test_no_variation_without_a_change_is_still_n_a() -> None:
    rows = _delta_rows(no_variation=True)
    rows[1].update(delta=None, lower=None, upper=None)
    root = svg_tree(reports.svg_delta_intervals(rows))
    wall_row = [g for g in root.iter(f"{SVG}g") if "row" in g.get("class").split()][1]
    assert wall_row.find(f"{SVG}circle") is None and "n/a" in [t.text for t in wall_row.iter(f"{SVG}text")]


@pytest.mark.parametrize(("raw", "step"), [(0.45, 0.5), (2.25, 2.5), (3, 5), (7, 10), (1, 1), (0.012, 0.02),
                                           (0, 1.0), (-2, 1.0)])
def test_nice_step_is_the_smallest_1_2_2_5_5_step_at_least_the_raw_one(raw: float, step: float) -> None:
    assert nice_step(raw) == pytest.approx(step)


def test_nice_step_near_the_float_range() -> None:
    assert nice_step(float("inf")) == float("inf")
    assert nice_step(1.1e308) == 1.1e308  # 2e308 is no float: the raw step itself
    assert nice_step(9e307) == pytest.approx(1e308)


@pytest.mark.parametrize("delta", [1.0e308, -1.0e308, 1.7e308])
def test_changes_near_the_float_range_are_drawn(delta: float) -> None:
    rows = _delta_rows(delta=delta, lower=delta, upper=delta)
    root = svg_tree(reports.svg_delta_intervals(rows))
    wall = [g for g in root.iter(f"{SVG}g") if "row" in g.get("class").split()][1]
    assert wall.find(f"{SVG}rect[@class='ci']") is not None and wall.find(f"{SVG}circle") is not None


@pytest.mark.parametrize("values", [[1.0, 2.0, 1e308], [-1e308, 1e308], [1e308, 1e308, 5.0], [1e300, 1.0, 1e-300]])
def test_histograms_of_values_near_the_float_range_are_drawn(values: list[float]) -> None:
    root = svg_tree(reports.svg_histogram(values, "task_wall_ms", markers={"p50": sorted(values)[len(values) // 2]}))
    assert root.find(f"{SVG}rect") is not None


def test_text_width_is_0_7_em_per_character_plus_padding() -> None:
    assert text_width("abc") == pytest.approx(0.7 * 10 * 3 + 2)
    assert text_width("abc", 20) == pytest.approx(0.7 * 20 * 3 + 2)
    assert text_width("") == pytest.approx(2.0)


def test_interval_bar_places_the_band_and_the_dot_on_its_track() -> None:
    # track from 16 to 284 (300 - 16): 25% at 16 + 67 = 83, 75% at 217, the estimate at 150
    bar = str(reports.svg_interval_bar(0.5, 0.25, 0.75, label="rate"))
    assert '<rect class="ci" x="83" y="10" width="134" height="12" rx="3"/>' in bar
    assert '<circle class="pt" cx="150" cy="16" r="5.5"/>' in bar
    assert [m for m in ("0%", "50%", "100%") if f">{m}</text>" in bar] == ["0%", "50%", "100%"]
    assert "n/a: no eligible denominator" in str(reports.svg_interval_bar(None, 0.1, 0.2))


def test_hbar_widths_are_proportional_to_the_largest_count() -> None:
    # bars start at 140 + 8 = 148 and span 420 - 148 - 44 = 228 for the largest count
    chart = str(reports.svg_hbar_chart([("a", 4), ("b", 2), ("c", 0)]))
    assert 'viewBox="0 0 420 84"' in chart  # 2 x 6 + 3 rows of 24
    assert '<rect class="bar" x="148" y="10" width="228" height="16" rx="3"/>' in chart
    assert '<rect class="bar" x="148" y="34" width="114" height="16" rx="3"/>' in chart
    assert '<text class="val" x="382" y="22">4</text>' in chart
    assert '<text class="val zero" x="154" y="70">0</text>' in chart and chart.count('class="bar"') == 2


def test_stacked_bar_segments_share_the_width_by_count() -> None:
    bar = str(svg_stacked_bar([("passed", 3, "ok"), ("none", 0, "skip"), ("failed<", 1, "bad")], width=100))
    assert '<rect class="ok" x="0" y="0" width="75" height="18"><title>passed: 3</title></rect>' in bar
    assert '<rect class="bad" x="75" y="0" width="25" height="18"><title>failed&lt;: 1</title></rect>' in bar
    assert "skip" not in bar


def test_histograms_chart_the_eligible_attempts_with_a_value() -> None:
    attempts = [{"agent_eligible": True, "task_wall_ms": 1000, "total_tokens": 10, "tool_calls": 2, "device_actions": 1},
                {"agent_eligible": True, "task_wall_ms": 3000, "total_tokens": None, "tool_calls": 4, "device_actions": 1},
                {"agent_eligible": False, "task_wall_ms": 99_000, "total_tokens": 5, "tool_calls": 9, "device_actions": 9}]
    metrics = {"efficiency": {"task_wall_ms": {"mean": 2000, "p50": 2000, "p90": 2800, "p95": 2900}}}
    charts = {c["field"]: c for c in histograms(metrics, attempts)}
    assert list(charts) == ["task_wall_ms", "total_tokens", "tool_calls", "device_actions"]
    wall = charts["task_wall_ms"]
    assert (wall["n"], wall["missing"]) == (2, 0)
    assert wall["summary"] == "mean 2.0 s · p50 2.0 s · p90 2.8 s · p95 2.9 s"
    assert wall["title"].endswith(" per attempt") and "p50 2.0 s" in str(wall["svg"])
    assert (charts["total_tokens"]["n"], charts["total_tokens"]["missing"]) == (1, 1)
    assert charts["tool_calls"]["summary"] == "mean n/a · p50 n/a · p90 n/a · p95 n/a"
