"""The Grafana dashboard (minikafka/observe/dashboards/minikafka.json) only charts metrics the broker
exports: every metric name in every panel's PromQL (rows' nested panels included) and in the
templating variables' label_values() queries is in metrics.NAMES or metrics.PROCESS_NAMES, or is a
histogram family of NAMES with its _bucket / _sum / _count suffix. A renamed or dropped metric
otherwise leaves an empty panel that nothing notices.

The metric names are read from each expression by a small lexical extractor (strings, label
matchers, range selectors, by/without/on/ignoring/group_* label lists, numbers, durations and
Grafana variables stripped; then every identifier that is not a PromQL function, aggregation or
keyword is a metric name); its own tests are at the bottom. No sockets.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.observe import metrics

pytestmark = pytest.mark.unit

DASHBOARD = Path(metrics.__file__).resolve().parent / "dashboards" / "minikafka.json"

# The histogram families of NAMES (rendered as <name>_bucket, <name>_sum, <name>_count).
HISTOGRAMS = ("kafka_network_requestmetrics_totaltimems",)
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

# -- PromQL metric-name extraction ----------------------------------------------------------------

FUNCTIONS = frozenset({
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
    "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "double_exponential_smoothing",
    "end", "exp", "floor", "histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile",
    "histogram_stddev", "histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase",
    "info", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time",
    "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear", "present_over_time",
    "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort",
    "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "start", "stddev_over_time",
    "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
})
AGGREGATIONS = frozenset({
    "avg", "bottomk", "count", "count_values", "group", "limit_ratio", "limitk", "max", "min", "quantile",
    "stddev", "stdvar", "sum", "topk",
})
KEYWORDS = frozenset({
    "and", "atan2", "bool", "by", "group_left", "group_right", "ignoring", "inf", "nan", "offset", "on", "or",
    "unless", "without",
})
NOT_METRICS = FUNCTIONS | AGGREGATIONS | KEYWORDS

_NAME_MATCHER = re.compile(r"""__name__\s*=\s*(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)')""")
_STRING = re.compile(r""""(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`""")
_GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]")
_LABEL_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE)
_COMMENT = re.compile(r"#[^\n]*")
_NUMBER = re.compile(r"(?<![\w:.])(?:\d[\w.]*|\.\d[\w]*)")  # 0.99, 1e3, 0x1f, 5m, 1h30m
_IDENTIFIER = re.compile(r"[A-Za-z_:][\w:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (Grafana's $variables allowed in it)."""
    names = {a or b for a, b in _NAME_MATCHER.findall(expr)}  # {__name__="x"}: the name is a string
    text = _STRING.sub(" ", expr)
    text = _COMMENT.sub(" ", text)
    text = _GRAFANA_VARIABLE.sub(" ", text)
    text = _LABEL_MATCHERS.sub(" ", text)  # label names and values
    text = _RANGE.sub(" ", text)  # [5m], [$__rate_interval], [1h:1m]
    text = _LABEL_LIST.sub(" ", text)  # by (topic), on (a, b), group_left (c)
    text = _NUMBER.sub(" ", text)
    names.update(word for word in _IDENTIFIER.findall(text) if word.lower() not in NOT_METRICS)
    return names


_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:([A-Za-z_:][\w:]*)\s*(?:\{[^}]*\})?\s*,)?\s*\w+\s*\)\s*$")
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.DOTALL)


def variable_metric_names(query: str) -> set[str]:
    """The metric a Grafana label_values(metric, label) variable query reads; query_result(PromQL)
    and plain PromQL as expressions."""
    match = _LABEL_VALUES.match(query)
    if match:
        return {match.group(1)} if match.group(1) else set()
    match = _QUERY_RESULT.match(query)
    return metric_names(match.group(1) if match else query)


def exported(name: str) -> bool:
    if name in metrics.NAMES or name in metrics.PROCESS_NAMES:
        return True
    return any(name == family + suffix for family in HISTOGRAMS for suffix in HISTOGRAM_SUFFIXES)


def unknown_names(expr: str) -> set[str]:
    return {n for n in metric_names(expr) if not exported(n)}


# -- The dashboard ---------------------------------------------------------------------------------


def load(path: Path = DASHBOARD) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def walk_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, rows and the panels collapsed rows nest included."""
    for panel in panels:
        yield panel
        yield from walk_panels(panel.get("panels") or [])


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and templating variable query."""
    for panel in walk_panels(dashboard.get("panels", [])):
        for target in panel.get("targets") or []:
            if "expr" in target:
                yield f"panel {panel.get('id')} {panel.get('title')!r} target {target.get('refId')}", target["expr"]


def variable_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        yield f"variable {var.get('name')!r}", query or var.get("definition", "")


def check_metric_names(dashboard: dict[str, Any]) -> None:
    """Fail with every name the broker does not export, and where it is used."""
    unknown: dict[str, list[str]] = {}
    for where, expr in expressions(dashboard):
        for name in sorted(unknown_names(expr)):
            unknown.setdefault(name, []).append(where)
    for where, query in variable_queries(dashboard):
        for name in sorted(n for n in variable_metric_names(query) if not exported(n)):
            unknown.setdefault(name, []).append(where)
    assert not unknown, (
        f"{DASHBOARD.name} uses metric names minikafka.observe.metrics does not export "
        f"(not in NAMES / PROCESS_NAMES, nor a histogram's _bucket/_sum/_count): {sorted(unknown)}\n"
        + "\n".join(f"  {name}: {', '.join(places)}" for name, places in sorted(unknown.items())))


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return load()


def test_histogram_families_are_exported_names():
    for family in HISTOGRAMS:
        assert family in metrics.NAMES
        assert not family.endswith("_total")


def test_every_metric_the_dashboard_uses_is_exported(dashboard):
    assert list(expressions(dashboard)), "no PromQL targets found in the dashboard"
    check_metric_names(dashboard)


def test_every_expression_reads_some_metric(dashboard):
    """An expression with no metric name left means the extractor (or the expression) is wrong."""
    empty = [where for where, expr in expressions(dashboard) if not metric_names(expr)]
    assert not empty, f"expressions without a metric name: {empty}"


@pytest.mark.parametrize("fragment", [
    "messagesin", "bytesin", "bytesout", "requests_total", "totaltimems", "log_size", "laststableoffsetlag",
    "coordinator_transaction_transactions", "consumergroup_lag", "process_resident_memory_bytes",
])
def test_a_panel_charts(dashboard, fragment):
    charting = [panel.get("title") for panel in walk_panels(dashboard["panels"])
                if any(fragment in name for target in panel.get("targets") or []
                       for name in metric_names(target.get("expr", "")))]
    assert charting, f"no panel charts a metric with {fragment!r} in its name"


def test_panel_ids_are_unique_and_every_panel_is_placed(dashboard):
    panels = list(walk_panels(dashboard["panels"]))
    ids = [panel.get("id") for panel in panels]
    assert all(isinstance(i, int) for i in ids), ids
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []
    for panel in panels:
        pos = panel.get("gridPos", {})
        assert {"h", "w", "x", "y"} <= pos.keys(), panel.get("title")
        assert pos["x"] + pos["w"] <= 24, panel.get("title")


def test_importable_with_a_prometheus_datasource_input_and_variables(dashboard):
    assert dashboard["schemaVersion"] == 39
    assert [(i["name"], i["pluginId"]) for i in dashboard["__inputs"]] == [("DS_PROMETHEUS", "prometheus")]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    queries = dict(variable_queries(dashboard))
    assert queries["variable 'topic'"] == "label_values(kafka_log_log_logendoffset, topic)"
    assert queries["variable 'group'"] == "label_values(kafka_consumergroup_lag, consumergroup)"
    for panel in walk_panels(dashboard["panels"]):
        if panel.get("type") != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel.get("title")


def test_a_bogus_metric_in_a_copy_of_the_dashboard_fails_the_check(dashboard, tmp_path):
    broken = copy.deepcopy(dashboard)
    # In a panel nested in a (collapsed) row, to show the walk reaches those too.
    broken["panels"].append({"type": "row", "id": 9999, "title": "extra", "collapsed": True, "panels": [
        {"type": "timeseries", "id": 10000, "title": "bogus",
         "targets": [{"refId": "A", "expr": 'sum by (topic) (rate(kafka_bogus_metric_total{topic=~"$topic"}'
                                            '[$__rate_interval]))'}]}]})
    path = tmp_path / "minikafka.json"
    path.write_text(json.dumps(broken, indent=2))
    with pytest.raises(AssertionError, match=r"kafka_bogus_metric_total.*panel 10000 'bogus' target A"):
        check_metric_names(load(path))


# -- The extractor itself --------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "names"), [
    ('sum by (topic) (rate(kafka_server_brokertopicmetrics_messagesin_total{topic=~"$topic"}[$__rate_interval]))',
     {"kafka_server_brokertopicmetrics_messagesin_total"}),
    ("histogram_quantile(0.99, sum by (le, request) "
     "(rate(kafka_network_requestmetrics_totaltimems_bucket[$__rate_interval])))",
     {"kafka_network_requestmetrics_totaltimems_bucket"}),
    ('sum(rate(a_total{job="x", instance!~"$i"}[5m])) by (topic) / on (topic) group_left (state) b_info',
     {"a_total", "b_info"}),
    ("time() - max(process_start_time_seconds offset 1h30m)", {"process_start_time_seconds"}),
    ('max without (partition) (kafka_log_log_size{topic="sum", partition!="rate"}) > bool 1e3',
     {"kafka_log_log_size"}),
    ('label_replace(up, "dst", "$1", "src", "(.*)") and ON (job) count_values("v", build_info)',
     {"up", "build_info"}),
    ('{__name__="process_open_fds"} * ${scale:raw}', {"process_open_fds"}),
    ("rate(process_cpu_seconds_total[1h:1m]) # a comment naming not_a_metric", {"process_cpu_seconds_total"}),
])
def test_extractor_finds_metric_names_only(expr, names):
    assert metric_names(expr) == names


@pytest.mark.parametrize(("expr", "unknown"), [
    ('sum by (topic) (rate(kafka_server_brokertopicmetrics_messagesin_totl{topic=~"$topic"}[$__rate_interval]))',
     {"kafka_server_brokertopicmetrics_messagesin_totl"}),
    ("rate(kafka_network_requestmetrics_requests_total_bucket[5m])",  # not a histogram
     {"kafka_network_requestmetrics_requests_total_bucket"}),
    ("kafka_log_log_size / kafka_topic_partitions", {"kafka_topic_partitions"}),
    ("kafka_network_requestmetrics_totaltimems_count + process_open_fds", set()),
])
def test_unknown_metric_names_are_reported(expr, unknown):
    assert unknown_names(expr) == unknown


@pytest.mark.parametrize(("query", "names"), [
    ("label_values(kafka_log_log_logendoffset, topic)", {"kafka_log_log_logendoffset"}),
    ('label_values(kafka_consumergroup_lag{topic=~"$topic"}, consumergroup)', {"kafka_consumergroup_lag"}),
    ("label_values(topic)", set()),
    ("query_result(max(kafka_log_log_size))", {"kafka_log_log_size"}),
])
def test_variable_queries(query, names):
    assert variable_metric_names(query) == names
