"""`veter profile`: py-spy records every worker of a running master into one flame graph."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

from veter.profiling import children_of, render_svg

from .processes import ROOT, Proc


def _hammer(port: int, stop: threading.Event) -> None:
    import socket

    while not stop.is_set():
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /spin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            while sock.recv(4096):
                pass


def test_the_flame_graph_of_all_workers_has_samples_from_the_handler(tmp_path: Path) -> None:
    proc = Proc(["run", "tests.e2e.apps.supervised:app", "--port", "0", "--workers", "2"])
    stop = threading.Event()
    clients = []
    try:
        port = proc.wait_ready()
        start = 0
        for _ in range(2):
            match = proc.wait_for(r"worker \d+ ready", start=start)
            start = proc.lines.index(match.string) + 1
        clients = [threading.Thread(target=_hammer, args=(port, stop), daemon=True) for _ in range(4)]
        for client in clients:
            client.start()
        out = tmp_path / "flame.svg"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "veter",
                "profile",
                "--pid",
                str(proc.pid),
                "--duration",
                "3",
                "-o",
                str(out),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "recording 2 process(es)" in done.stdout
        svg = out.read_text()
        ET.fromstring(svg)  # well-formed
        assert "spin_for_the_profiler" in svg
        assert "warning" not in done.stderr
    finally:
        stop.set()
        for client in clients:
            client.join(10)
        for child in children_of(proc.pid):
            os.kill(child, signal.SIGKILL)
        proc.close()


def test_render_svg_sizes_frames_by_samples() -> None:
    from collections import Counter

    svg = render_svg(Counter({"main;handler;work": 3, "main;idle": 1}), "t")
    root = ET.fromstring(svg)
    rects = {
        g.findtext("{http://www.w3.org/2000/svg}title", ""): g.find("{http://www.w3.org/2000/svg}rect")
        for g in root.iter("{http://www.w3.org/2000/svg}g")
    }
    widths = {
        title.split(" (")[0]: float(rect.get("width", 0)) for title, rect in rects.items() if rect is not None
    }
    assert widths["all"] == widths["main"] == 1200
    assert widths["handler"] == widths["work"] == 900
    assert widths["idle"] == 300
