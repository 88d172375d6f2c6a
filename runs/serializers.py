"""REST API v1 shapes of runs, their samples and check results. runs.services writes."""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from checks.kinds import Outcome
from checks.models import Check, Test, scenario_name
from core.api import VisibleRelatedField, absolute_url
from core.ids import MAX_ID
from core.rows import datetime_text, page_urls
from runs.consistency import Figures, summary_figures
from runs.models import VERDICT_FIELDS, CheckResult, Run, Sample
from runs.services import max_batch_runs

OUTCOMES = [o.value for o in Outcome]


class OutcomeField(serializers.ChoiceField):
    """An outcome, or null while it is not known yet (stored as "")."""

    def __init__(self, **kwargs):
        kwargs.setdefault("read_only", True)
        super().__init__(choices=Outcome.choices, allow_null=True, **kwargs)

    def to_representation(self, value):
        return value or None


# ----------------------------------------------------------------------------- launching


def _additional_checks(help_text: str) -> serializers.ListField:
    """A launch's optional `additional_checks`: up to 100 ids of library checks."""
    return serializers.ListField(
        child=VisibleRelatedField(Check, noun="Check"), required=False, max_length=100, help_text=help_text
    )


class LaunchRunSerializer(serializers.Serializer):
    test = VisibleRelatedField(Test, noun="Test")
    additional_checks = _additional_checks(
        "Ids of library checks of the same agent to run on top of the test's own (required ones)."
    )


class LaunchTrialsSerializer(LaunchRunSerializer):
    trials = serializers.IntegerField(
        min_value=1,
        help_text="How many runs of the test to launch as one batch (at most EVALCONSOLE_MAX_TRIALS, 10 by "
        "default); each run stays within the per-run sample limit.",
    )


class LaunchTestSetSerializer(serializers.Serializer):
    additional_checks = _additional_checks("Ids of library checks added to every run.")


class LaunchBatchSerializer(serializers.Serializer):
    tests = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        help_text="One run per entry, in this order; a test may repeat (3 entries of one test: 3 runs). "
        "At most EVALCONSOLE_MAX_BATCH_RUNS entries (200 by default).",
    )
    additional_checks = _additional_checks("Ids of library checks added to every run (of the tests' agent).")

    def validate_tests(self, ids: list[int]) -> list[Test]:
        """The tests, read in one query: an id you cannot see is a 400 naming its place in the list."""
        limit = max_batch_runs()
        if not ids:
            raise serializers.ValidationError("Name at least one test to launch.")
        if len(ids) > limit:
            raise serializers.ValidationError(f"{len(ids)} runs is over the limit of {limit} runs per batch.")
        user = getattr(self.context.get("request"), "user", None)
        found = Test.objects.visible_to(user).in_bulk(set(ids))
        missing = {str(i): [f"Test {pk} does not exist."] for i, pk in enumerate(ids) if pk not in found}
        if missing:
            raise serializers.ValidationError(missing)
        return [found[pk] for pk in ids]


# ----------------------------------------------------------------------------- runs


PASS_HAT_HELP = (
    'pass^k for k = "1".."n" (n = determinate): C(c, k) / C(n, k) for c passes among n determinate samples, '
    "the chance that every one of k samples passes. No key for k > n; {} when n = 0."
)
PASS_AT_HELP = (
    'pass@k for k = "1".."n": 1 - C(n - c, k) / C(n, k), the chance that at least one of k samples passes.'
)
RUN_FIGURE_HELP = (
    " The run's figure is the mean over all its scenarios, so it has keys only up to the smallest "
    "determinate count among them (none when a scenario has no determinate sample)."
)


class ScenarioCountsSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    name = serializers.CharField()
    total = serializers.IntegerField(help_text="Samples planned for this scenario.")
    done = serializers.IntegerField()
    pending = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errored = serializers.IntegerField()
    indeterminate = serializers.IntegerField()
    determinate = serializers.IntegerField(help_text="passed + failed")
    pass_rate = serializers.FloatField(
        allow_null=True, help_text="Percent passed of determinate; null if none."
    )
    min_valid = serializers.IntegerField()
    required_pass_rate = serializers.IntegerField()
    meets_threshold = serializers.BooleanField(allow_null=True)
    enough_valid = serializers.BooleanField()
    flaky = serializers.BooleanField(help_text="Some determinate samples passed and some failed.")
    pass_hat_k = serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=1),
        help_text=PASS_HAT_HELP,
    )
    pass_at_k = serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=1),
        help_text=PASS_AT_HELP,
    )


class RunCheckSerializer(serializers.Serializer):
    """A check version the run used (frozen at launch), with its outcomes across the run's samples."""

    check = serializers.IntegerField(help_text="The library check id.")
    check_version = serializers.IntegerField(help_text="The exact check version id.")
    version = serializers.IntegerField(help_text="The check version number.")
    name = serializers.CharField()
    kind = serializers.CharField()
    required = serializers.BooleanField()
    additional = serializers.BooleanField(help_text="Picked at launch, not attached to the test.")
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errored = serializers.IntegerField()
    indeterminate = serializers.IntegerField()
    pass_rate = serializers.FloatField(allow_null=True)
    flaky = serializers.BooleanField(help_text="It both passed and failed on one scenario of the run.")
    flaky_scenarios = serializers.ListField(
        child=serializers.IntegerField(), help_text="Indexes of the scenarios it both passed and failed on."
    )


def _zero_scenario(index: int, name: str, total: int, min_valid: int, rate: int) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "total": total,
        "done": 0,
        "pending": total,
        "passed": 0,
        "failed": 0,
        "errored": 0,
        "indeterminate": 0,
        "determinate": 0,
        "pass_rate": None,
        "min_valid": min_valid,
        "required_pass_rate": rate,
        "meets_threshold": None,
        "enough_valid": False,
        "flaky": False,
    }


def _check_rows(run: Run) -> list[tuple]:
    """The run's check versions as (check, check version, number, name, kind, required, additional):
    `run.check_rows` when given as such, else its run checks."""
    rows = getattr(run, "check_rows", None)
    if rows is not None:
        return rows
    return [
        (v.parent_id, v.pk, v.number, v.name, v.kind, rc.required, rc.additional)
        for rc in run.run_checks.all()
        for v in (rc.check_version,)
    ]


def _summary(value: Any) -> dict[str, Any]:
    """A run's stored summary, or {} when it holds anything but an object."""
    return value if isinstance(value, dict) else {}


class FiguresJSON:
    """pass^k and pass@k from runs' stored counts, with the run's and each scenario's as JSON: the JSON
    once per distinct figures (a list of 50 runs has few: summary_figures hands out one Figures per
    distinct counts). Callers copy what they show."""

    def __init__(self):
        self._shown: dict[int, tuple[Figures, dict[str, Any], list[dict[str, Any]]]] = {}

    def __call__(self, summary: dict, scenario_count: int) -> tuple[Figures, dict, list[dict[str, Any]]]:
        figures = summary_figures(summary, scenario_count)
        found = self._shown.get(id(figures))  # the value holds `figures`: its id stays its own
        if found is None:
            found = self._shown[id(figures)] = (
                figures, figures.run.as_dict(), [s.as_dict() for s in figures.scenarios]
            )
        return found


def _scenario_rows(
    summary: dict, specs: list, version: tuple[int, int, int], figures: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The run's `scenarios`: each scenario of the test version (`specs`) with its stored counts;
    `version` is its (samples per scenario, min valid per scenario, required pass rate)."""
    total, min_valid, rate = version
    counted = {s.get("index"): s for s in summary.get("scenarios", []) if isinstance(s, dict)}
    rows = []
    for index, scenario in enumerate(specs):
        row = _zero_scenario(index, scenario_name(scenario, index), total, min_valid, rate)
        found = counted.get(index)
        if found:
            row.update({k: found[k] for k in row if k in found and k not in ("index", "name")})
        shown = figures[index]
        row["pass_hat_k"], row["pass_at_k"] = dict(shown["pass_hat_k"]), dict(shown["pass_at_k"])
        rows.append(row)
    return rows


def _pass_rate(summary: dict) -> float | None:
    """Percent of the run's determinate samples that passed (its scenarios' stored counts); None if none."""
    scenarios = [s for s in summary.get("scenarios", []) if isinstance(s, dict)]
    passed = sum([s.get("passed", 0) for s in scenarios])
    determinate = passed + sum([s.get("failed", 0) for s in scenarios])
    return round(100 * passed / determinate, 2) if determinate else None


# The first keys of a run's check version and of a sample's check result (CheckResultSerializer) as the API
# shows them.
CHECK_VERSION_KEYS = ("check", "check_version", "version", "name", "kind", "required")


def _checks(summary: dict, rows: list[tuple]) -> list[dict[str, Any]]:
    """The run's `checks`: each of its check versions (`_check_rows`) with its stored counts."""
    counts = summary.get("checks", {})
    counts = counts if isinstance(counts, dict) else {}
    shown = []
    for check, version, number, name, kind, required, additional in rows:
        found = counts.get(str(version)) or counts.get(str(check)) or {}
        flaky = [i for i in found.get("flaky_scenarios") or () if isinstance(i, int)]
        shown.append(
            {
                **dict(zip(CHECK_VERSION_KEYS, (check, version, number, name, kind, required), strict=True)),
                "additional": additional,
                "passed": found.get("passed", 0),
                "failed": found.get("failed", 0),
                "errored": found.get("errored", 0),
                "indeterminate": found.get("indeterminate", 0),
                "pass_rate": found.get("pass_rate"),
                "flaky_scenarios": flaky,
                "flaky": bool(flaky),
            }
        )
    return shown


class RunSerializer(serializers.ModelSerializer):
    agent = serializers.IntegerField(source="agent_id", read_only=True)
    test = serializers.IntegerField(source="test_id", read_only=True)
    test_set = serializers.IntegerField(source="test.test_set_id", read_only=True)
    test_version = serializers.IntegerField(
        source="test_version.number", read_only=True, help_text="The test version number the run executed."
    )
    test_version_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(source="test_version.name", read_only=True)
    result = OutcomeField(help_text="pass, fail, indeterminate or error; null until the run completes.")
    launched_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    progress_percent = serializers.IntegerField(read_only=True)
    pass_rate = serializers.SerializerMethodField(help_text="Percent of determinate samples that passed.")
    determinate = serializers.SerializerMethodField(
        help_text="Determinate (passed + failed) samples of the run."
    )
    pass_hat_k = serializers.SerializerMethodField(help_text=PASS_HAT_HELP + RUN_FIGURE_HELP)
    pass_at_k = serializers.SerializerMethodField(help_text=PASS_AT_HELP + RUN_FIGURE_HELP)
    scenarios = serializers.SerializerMethodField()
    checks = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField(help_text="The run's page in the console (absolute URL).")

    class Meta:
        model = Run
        fields = [
            "id",
            "agent",
            "test",
            "test_set",
            "test_version",
            "test_version_id",
            "name",
            "status",
            "result",
            "batch",
            "total_samples",
            "done_samples",
            "progress_percent",
            "pass_rate",
            "determinate",
            "pass_hat_k",
            "pass_at_k",
            "scenarios",
            "checks",
            "launched_by",
            "created_at",
            "started_at",
            "finished_at",
            "url",
        ]
        read_only_fields = fields

    def _figures(self, run: Run) -> tuple[Figures, dict[str, Any], list[dict[str, Any]]]:
        """The run's figures and their JSON (FiguresJSON), once per run and serializer."""
        cache = self.__dict__.setdefault("_figures_cache", {})
        found = cache.get(run.pk)
        if found is None:
            of = self.__dict__.get("_figures_json")
            if of is None:
                of = self.__dict__["_figures_json"] = FiguresJSON()
            found = cache[run.pk] = of(_summary(run.summary), len(run.test_version.scenarios or []))
        return found

    def get_determinate(self, run: Run) -> int:
        return self._figures(run)[0].run.determinate

    @extend_schema_field(
        {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}
    )
    def get_pass_hat_k(self, run: Run) -> dict[str, float]:
        return dict(self._figures(run)[1]["pass_hat_k"])

    @extend_schema_field(
        {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}
    )
    def get_pass_at_k(self, run: Run) -> dict[str, float]:
        return dict(self._figures(run)[1]["pass_at_k"])

    @extend_schema_field(ScenarioCountsSerializer(many=True))
    def get_scenarios(self, run: Run) -> list[dict[str, Any]]:
        v = run.test_version
        settings = (v.samples_per_scenario, v.min_valid_per_scenario, v.required_pass_rate)
        return _scenario_rows(_summary(run.summary), v.scenarios or [], settings, self._figures(run)[2])

    def get_pass_rate(self, run: Run) -> float | None:
        return _pass_rate(_summary(run.summary))

    @extend_schema_field(RunCheckSerializer(many=True))
    def get_checks(self, run: Run) -> list[dict[str, Any]]:
        return _checks(_summary(run.summary), _check_rows(run))

    def get_url(self, run: Run) -> str | None:
        try:
            path = run.get_absolute_url()
        except NoReverseMatch:  # a deployment without the HTML pages
            return None
        request = self.context.get("request")
        return absolute_url(request, path) if request is not None else path


# What the runs list reads of each run, in this order (run_rows draws its rows from them).
RUN_ROW_COLUMNS = (
    *("id", "agent_id", "test_id", "test__test_set_id", "test_version__number", "test_version_id"),
    *("test_version__name", "status", "result", "batch", "total_samples", "done_samples", "summary"),
    *("test_version__scenarios", "test_version__samples_per_scenario"),
    *("test_version__min_valid_per_scenario", "test_version__required_pass_rate"),
    *("launched_by__username", "created_at", "started_at", "finished_at"),
)


def run_rows(page: list[tuple], checks: dict[int, list[tuple]], request) -> list[dict[str, Any]]:
    """RunSerializer's body of each run of `page` (RUN_ROW_COLUMNS tuples), with its check versions
    (`checks`: run id → `_check_rows` tuples), without a model instance or DRF's per-field dispatch."""
    url = page_urls(request, Run.detail_route)
    when = datetime_text()
    figures_of = FiguresJSON()
    rows = []
    for (
        pk, agent, test, test_set, number, version_id, name, status, result, batch, total, done, summary,
        specs, per_scenario, min_valid, rate, launcher, created, started, finished,
    ) in page:
        summary = _summary(summary)
        specs = specs or []
        figures, shown, per_figures = figures_of(summary, len(specs))
        rows.append(
            {
                "id": pk,
                "agent": agent,
                "test": test,
                "test_set": test_set,
                "test_version": number,
                "test_version_id": version_id,
                "name": name,
                "status": status,
                "result": result or None,
                "batch": batch,
                "total_samples": total,
                "done_samples": done,
                "progress_percent": int(done * 100 / total) if total else 100,
                "pass_rate": _pass_rate(summary),
                "determinate": figures.run.determinate,
                "pass_hat_k": dict(shown["pass_hat_k"]),
                "pass_at_k": dict(shown["pass_at_k"]),
                "scenarios": _scenario_rows(summary, specs, (per_scenario, min_valid, rate), per_figures),
                "checks": _checks(summary, checks[pk]),
                "launched_by": launcher,
                "created_at": when(created),
                "started_at": when(started),
                "finished_at": when(finished),
                "url": url(pk),
            }
        )
    return rows


class LaunchedRunsSerializer(serializers.Serializer):
    runs = RunSerializer(many=True)


class LaunchedTrialsSerializer(serializers.Serializer):
    batch = serializers.CharField(
        help_text="The batch id: `GET runs/batches/{batch}/` pools the trials' samples."
    )
    runs = RunSerializer(many=True)


def _figures_field(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.FloatField(min_value=0, max_value=1), help_text=help_text)


class ScenarioFiguresSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    name = serializers.CharField()
    determinate = serializers.IntegerField(
        help_text="Passed + failed samples of the scenario over the batch's runs."
    )
    pass_hat_k = _figures_field(PASS_HAT_HELP)
    pass_at_k = _figures_field(PASS_AT_HELP)


class BatchTestSerializer(serializers.Serializer):
    test = serializers.IntegerField()
    name = serializers.CharField()
    runs = serializers.ListField(child=serializers.IntegerField(), help_text="The batch's runs of this test.")
    complete = serializers.BooleanField(help_text="Every one of these runs has finished.")
    determinate = serializers.IntegerField()
    pass_hat_k = _figures_field(PASS_HAT_HELP + RUN_FIGURE_HELP)
    pass_at_k = _figures_field(PASS_AT_HELP + RUN_FIGURE_HELP)
    scenarios = ScenarioFiguresSerializer(many=True)


class BatchSerializer(serializers.Serializer):
    batch = serializers.CharField()
    tests = BatchTestSerializer(many=True)


def batch_data(batch: str, groups) -> dict[str, Any]:
    """The body of `GET runs/batches/{batch}/` from runs.compare.batch_groups."""
    tests = []
    for group in groups:
        run = group.figures.run.as_dict()
        tests.append(
            {
                "test": group.test.pk,
                "name": group.test.name,
                "runs": [r.pk for r in group.runs],
                "complete": group.complete,
                **run,
                "scenarios": [
                    {"index": i, "name": name, **figures.as_dict()}
                    for i, (name, figures) in enumerate(
                        zip(group.names, group.figures.scenarios, strict=True)
                    )
                ],
            }
        )
    return {"batch": batch, "tests": tests}


# ----------------------------------------------------------------------------- samples


# A CheckResult with its check's id and its check version's number and name (runs and monitors).
# (A comment, not a docstring: drf-spectacular would publish a docstring as every subclass's description.)
class CheckVersionResultSerializer(serializers.ModelSerializer):
    check = serializers.IntegerField(source="check_version.parent_id", read_only=True)
    version = serializers.IntegerField(source="check_version.number", read_only=True)
    name = serializers.CharField(source="check_version.name", read_only=True)


class CheckResultSerializer(CheckVersionResultSerializer):
    check_version = serializers.IntegerField(source="check_version_id", read_only=True)
    kind = serializers.CharField(source="check_version.kind", read_only=True)
    outcome = OutcomeField()
    evidence = serializers.ListField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="Indexes into the sample's toolCalls or trace.",
    )

    class Meta:
        model = CheckResult
        fields = [*CHECK_VERSION_KEYS, *VERDICT_FIELDS]
        read_only_fields = fields


@extend_schema_field(OpenApiTypes.ANY)
class AnyJSONField(serializers.JSONField):
    """Evidence exactly as the agent reported it (null: the agent did not report it)."""


class SampleSerializer(serializers.ModelSerializer):
    outcome = OutcomeField(help_text="null while the sample is queued or running.")
    scenario = serializers.SerializerMethodField(help_text="The scenario's name.")
    tool_calls = AnyJSONField(read_only=True)
    trace = AnyJSONField(read_only=True)
    transcript = serializers.ListField(child=serializers.DictField(), read_only=True)
    results = CheckResultSerializer(many=True, read_only=True)
    world = serializers.CharField(
        source="world_id",
        read_only=True,
        allow_null=True,
        help_text="The sample's world (a scene test), or null.",
    )
    world_checks = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="A scene sample's own scene checks, as checks.json holds them (WORLDS.md Results).",
    )

    class Meta:
        model = Sample
        fields = [
            "id",
            "scenario_index",
            "scenario",
            "sample_index",
            "status",
            "outcome",
            "output",
            "tool_calls",
            "trace",
            "transcript",
            "latency_ms",
            "error",
            "started_at",
            "finished_at",
            "results",
            "world",
            "world_checks",
        ]
        read_only_fields = fields

    def get_scenario(self, sample: Sample) -> str:
        names = self.context.get("scenario_names") or {}
        return names.get(sample.scenario_index) or scenario_name(None, sample.scenario_index)


# What the samples list reads of each sample, in this order, and of each of its results; sample_rows
# draws the rows from them.
SAMPLE_ROW_COLUMNS = (
    *("id", "scenario_index", "sample_index", "status", "outcome", "output", "tool_calls", "trace"),
    *("transcript", "latency_ms", "error", "started_at", "finished_at", "world_id", "world_checks"),
)
SAMPLE_RESULT_VALUES = (
    *("check_version__parent_id", "check_version_id", "check_version__number"),
    *("check_version__name", "check_version__kind", "required", *VERDICT_FIELDS),
)


def _objects(items: list | None) -> list | None:
    """What a read-only `ListField(child=DictField())` shows of a JSON column's list of objects."""
    if items is None:
        return None
    return [None if item is None else dict(item.items()) for item in items]


def _result_rows(results: list[tuple]) -> list[dict[str, Any]]:
    """CheckResultSerializer's body of each of a sample's results (SAMPLE_RESULT_VALUES tuples)."""
    return [
        {
            **dict(zip(CHECK_VERSION_KEYS, result[:6], strict=True)),
            "outcome": outcome or None,
            "expected": expected,
            "actual": actual,
            "explanation": why,
            "evidence": None if evidence is None else [None if i is None else int(i) for i in evidence],
        }
        for result in results
        for outcome, expected, actual, why, evidence in (result[6:],)
    ]


def sample_rows(page: list[tuple], results: dict[int, list[tuple]], names: dict[int, str]) -> list[dict]:
    """SampleSerializer's body of each sample of `page` (SAMPLE_ROW_COLUMNS tuples) with its results
    (`results`: sample id → SAMPLE_RESULT_VALUES tuples), `names` the run's scenario names,
    without a model instance or DRF's per-field dispatch."""
    when = datetime_text()
    return [
        {
            "id": pk,
            "scenario_index": scenario,
            "scenario": names.get(scenario) or scenario_name(None, scenario),
            "sample_index": index,
            "status": status,
            "outcome": outcome or None,
            "output": output,
            "tool_calls": tool_calls,
            "trace": trace,
            "transcript": _objects(transcript),
            "latency_ms": None if latency is None else float(latency),
            "error": error,
            "started_at": when(started),
            "finished_at": when(finished),
            "results": _result_rows(results[pk]),
            "world": world,
            "world_checks": _objects(world_checks),
        }
        for (
            pk, scenario, index, status, outcome, output, tool_calls, trace, transcript, latency, error,
            started, finished, world, world_checks,
        ) in page
    ]


class SampleWorldSerializer(serializers.Serializer):
    """A scene sample's world as the trial's files hold it (WORLDS.md "Results")."""

    world = serializers.CharField(help_text="The world's id.")
    scene = serializers.CharField(help_text="The scene's name.")
    ended = serializers.CharField(
        help_text="Why the trial ended (reply, timeout, error, call_budget, stopped); empty while it runs."
    )
    trace = serializers.ListField(
        child=serializers.DictField(), help_text="trace.json: every call the agent made to the tools, by seq."
    )
    events = serializers.ListField(
        child=serializers.DictField(),
        help_text="events.json: what happened in the world, in order (n from 1), with its simulated time.",
    )
    final_state = serializers.DictField(
        help_text="world.json: each simulated tool's final state (and its seed, for before → after)."
    )
    truncated = serializers.BooleanField(
        help_text="True when the trace or events were cut at 20,000 entries."
    )
