"""Prometheus exposition and adding figures up across workers (veter.metrics)."""

from __future__ import annotations

import json
from pathlib import Path

from veter import metrics
from veter.metrics import BUCKETS, Snapshot, render


def sample(requests: int) -> Snapshot:
    snap = Snapshot()
    snap.count("veter_requests_total", {"route": "/a", "status": "200"}, requests)
    buckets = [0] * (len(BUCKETS) + 1)
    buckets[0], buckets[-1] = requests - 1, 1
    snap.observe("veter_request_duration_seconds", {"route": "/a"}, buckets, 12.5, requests)
    snap.gauge("veter_requests_in_flight", {"worker": "1"}, 3)
    return snap


def test_exposition_format() -> None:
    snap = sample(5)
    snap.count("veter_requests_total", {"route": 'we"ird\\\n', "status": "404"}, 1)
    text = render(snap)
    lines = text.splitlines()
    assert "# TYPE veter_requests_total counter" in lines
    assert 'veter_requests_total{route="/a",status="200"} 5' in lines
    assert 'veter_requests_total{route="we\\"ird\\\\\\n",status="404"} 1' in lines
    assert "# TYPE veter_request_duration_seconds histogram" in lines
    assert 'veter_request_duration_seconds_bucket{route="/a",le="0.0005"} 4' in lines
    assert 'veter_request_duration_seconds_bucket{route="/a",le="10.0"} 4' in lines, "buckets are cumulative"
    assert 'veter_request_duration_seconds_bucket{route="/a",le="+Inf"} 5' in lines
    assert 'veter_request_duration_seconds_sum{route="/a"} 12.5' in lines
    assert 'veter_request_duration_seconds_count{route="/a"} 5' in lines
    assert 'veter_requests_in_flight{worker="1"} 3' in lines
    assert text.endswith("\n")
    # Each family's lines are together, after its HELP and TYPE.
    families = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(families) == len(set(families))


def test_snapshots_add_up_and_survive_json() -> None:
    total = Snapshot.from_json(json.loads(json.dumps(sample(5).to_json())))
    total.add(sample(7))
    assert total.counters[("veter_requests_total", (("route", "/a"), ("status", "200")))] == 12
    buckets, seconds, count = total.histograms[("veter_request_duration_seconds", (("route", "/a"),))]
    assert buckets[0] == 10 and buckets[-1] == 2 and seconds == 25.0 and count == 12


def test_a_retired_workers_counters_are_kept(tmp_path: Path) -> None:
    (tmp_path / "worker-11.json").write_text(json.dumps(sample(5).to_json()))
    (tmp_path / "worker-12.json").write_text(json.dumps(sample(2).to_json()))
    metrics.fold_retired(tmp_path, 11)
    metrics.fold_retired(tmp_path, 12)
    metrics.fold_retired(tmp_path, 13)  # no snapshot: nothing to fold
    assert sorted(p.name for p in tmp_path.iterdir()) == ["retired.json"]
    retired = Snapshot.from_json(json.loads((tmp_path / "retired.json").read_text()))
    assert retired.counters[("veter_requests_total", (("route", "/a"), ("status", "200")))] == 7
    assert retired.gauges == {}, "a dead worker's gauges end with it"
