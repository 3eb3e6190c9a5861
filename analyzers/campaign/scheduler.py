"""Run a batch of captures: the task graph, the process pool, Dask (:func:`analyze_dirs`)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..options import AnalysisOptions
from .capture import analyze_capture, cached_result, decode_source
from .chunked import chunk_size
from .discover import discover_all
from .identity import _json_default
from .plan import capture_sources, plan_capture
from .tables import write_campaign


def _single_threaded() -> None:
    """Pool-worker initializer: one worker per core, so no library thread pools on top of it
    (pyarrow's would oversubscribe the cores and slow every capture down)."""
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    _tune_malloc(True)
    from .._warnings import plain_warnings

    plain_warnings()


#: glibc mallopt parameters
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


def _tune_malloc(on: bool) -> bool:
    """glibc only: while ``on``, freed memory stays in the process for the next capture's arrays
    (no mmap/munmap of every large array, no page faults to refill it); off restores glibc's
    defaults and hands the memory back. Measured on the synthetic campaign: serial 4.7 → 4.4 s,
    kernel time 0.7–1.0 → 0.3 s. Returns whether it could be applied."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    if on:
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum
        mallopt(_M_TRIM_THRESHOLD, 1 << 30)
        mallopt(_M_TOP_PAD, 64 << 20)
    else:
        mallopt(_M_MMAP_THRESHOLD, 128 << 10)
        mallopt(_M_TRIM_THRESHOLD, 128 << 10)
        mallopt(_M_TOP_PAD, 0)
        libc.malloc_trim(0)
    return True


#: Phase-2 cost relative to decoding, per input byte: the scheduler's priority estimate.
_ANALYZE_WEIGHT = 0.5
#: A capture holding at least this share of one worker's part of the input bytes is split into
#: decode tasks (one per recording) and an analysis task.
_SPLIT_SHARE = 0.5


def _src_bytes(src: dict[str, Any]) -> int:
    """Input bytes of one source (both files of a per-core pair); 0 when missing."""
    return sum(f.stat().st_size for f in src.get("files") or [src["file"]] if f.is_file())


def _capture_bytes(path: Path) -> int:
    """Input bytes of a capture: its folder's files, or the recording a capture stands for."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def _plan_tasks(
    jobs: list[tuple[str, Path]],
    out_dir: Path,
    force: bool,
    options: AnalysisOptions,
    workers: int = 2,
) -> list[dict[str, Any]]:
    """The task graph of a batch: per capture, one decode task per recording (phase 1) and one
    analysis task depending on them (phase 2). Each task has a priority: the estimated length of
    the longest chain it starts (input bytes to decode, plus its capture's analysis), so a big
    capture's pieces run first and its analysis starts as soon as its last decode ends."""
    from .._io import SUFFIX

    tasks: list[dict[str, Any]] = []
    plans = []
    for cid, folder in jobs:
        try:
            srcs = capture_sources(plan_capture(folder, tick_hz=options.tick_hz))
        except Exception:  # the analysis task reports it
            srcs = []
        plans.append((cid, folder, srcs))
    total = sum(_src_bytes(s) for *_, srcs in plans for s in srcs)
    # only a capture too big to balance whole gets decode tasks of its own: splitting the small ones
    # would add a save/load and a task round trip each for nothing
    split_bytes = _SPLIT_SHARE * total / max(workers, 1)
    for cid, folder, srcs in plans:
        dest = out_dir / "captures" / cid
        sizes = {s["name"]: _src_bytes(s) for s in srcs}
        analysis = _ANALYZE_WEIGHT * sum(sizes.values())
        deps = []
        for src in srcs if sum(sizes.values()) >= split_bytes else ():
            if not sizes[src["name"]] or src["file"].name.endswith(SUFFIX):
                continue  # missing (reported by the analysis) or already decoded events
            if chunk_size(src, options.chunk_events) is not None:
                continue  # read in chunks by the analysis itself: no whole events file
            key = f"decode:{cid}:{src['name']}"
            deps.append(key)
            tasks.append(
                {
                    "key": key,
                    "capture": cid,
                    "fn": decode_source,
                    "args": (src, str(dest)),
                    "kwargs": {"on_corrupt": options.on_corrupt, "force": force},
                    "deps": [],
                    "priority": sizes[src["name"]] + analysis,
                }
            )
        tasks.append(
            {
                "key": f"analyze:{cid}",
                "capture": cid,
                "fn": analyze_capture,
                "args": (str(folder), cid, str(out_dir)),
                # the decodes above (if any) just honoured --force: phase 2 reuses what they wrote
                "kwargs": {
                    "force": True,
                    "reuse_events": bool(deps) or not force,
                    "options": options,
                },
                "deps": deps,
                "priority": analysis,
            }
        )
    return tasks


@dataclasses.dataclass
class _Timed:
    result: Any
    start: float
    end: float
    pid: int


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> _Timed:
    """``fn(*args, **kwargs)`` with when (``time.perf_counter``, one clock for all processes on
    Linux) and in which process it ran."""
    t = time.perf_counter()
    r = fn(*args, **kwargs)
    return _Timed(r, t, time.perf_counter(), os.getpid())


def _run_graph(
    tasks: list[dict[str, Any]],
    workers: int,
    submit: Callable[[dict[str, Any]], Any],
    wait_any: Callable[[set[Any]], set[Any]],
    on_done: Callable[[dict[str, Any], Any], None],
    retries: int = 0,
) -> None:
    """Run a task graph on ``workers`` slots: a task starts when its dependencies are done, the
    ready task with the highest priority first, and never more tasks in flight than slots (so
    priorities decide, not the executor's FIFO queue).

    A task whose future raises (its worker died, taking every task in flight with it) is run again
    up to ``retries`` times, alone, so that the task that kills its worker fails by itself and the
    others complete; after that ``on_done`` gets the exception as the task's result."""
    by_key = {t["key"]: t for t in tasks}
    waiting = {t["key"]: set(t["deps"]) for t in tasks}
    users: dict[str, list[str]] = {}
    for t in tasks:
        for d in t["deps"]:
            users.setdefault(d, []).append(t["key"])
    ready = [k for k, d in waiting.items() if not d]
    inflight: dict[Any, str] = {}
    attempts = dict.fromkeys(by_key, 0)
    suspects: set[str] = set()  # tasks that were in flight when a worker died: they run alone
    t0 = time.perf_counter()
    while ready or inflight:
        ready.sort(key=lambda k: (by_key[k]["priority"], k))
        while ready and len(inflight) < workers and not suspects & set(inflight.values()):
            if ready[-1] in suspects and inflight:
                break
            k = ready.pop()
            attempts[k] += 1
            by_key[k]["started"] = time.perf_counter() - t0
            inflight[submit(by_key[k])] = k
        for fut in wait_any(set(inflight)):
            k = inflight.pop(fut)
            try:
                r = fut.result()
            except Exception as e:  # the worker died, or the result could not be sent back
                if attempts[k] <= retries:
                    suspects.add(k)
                    ready.append(k)
                    continue
                r = e
            by_key[k]["ended"] = time.perf_counter() - t0
            if isinstance(r, _Timed):  # when and where the task really ran
                by_key[k].update(ran=(r.start - t0, r.end - t0), pid=r.pid)
                r = r.result
            on_done(by_key[k], r)
            for u in users.get(k, []):
                waiting[u].discard(k)
                if not waiting[u]:
                    ready.append(u)


#: Modules the pool's workers start with (imported once, in the fork server, before it forks them).
_PRELOAD = [
    "numpy",
    "pyarrow",
    "pyarrow.parquet",
    "pandas",  # pyarrow imports it on the first pa.array(ndarray): once there, not in every worker
    "pyarrow.pandas_compat",
    "trace_parsers.systemview",
    "trace_parsers.systemview.convert",
    "trace_parsers.tracex",
    "trace_parsers.tracex.convert",
    "trace_parsers.tracex.stats",
    "trace_parsers.sigrok",
    "trace_parsers.saleae",
    "analyzers._io",
    "analyzers.console",
    "analyzers.run",
    "analyzers.metrics.calib",
    "analyzers.metrics.kernel",
    "analyzers.user_config",
    "analyzers.metrics.context_switch",
    "analyzers.metrics.cpu_load",
    "analyzers.metrics.isr_latency",
    "analyzers.metrics.periodicity",
    "analyzers.metrics.workload",
    "analyzers.crossval",
    "analyzers.campaign.capture",
    "analyzers.campaign.tables",
]


def _worker_ready() -> int:
    return os.getpid()


class _ProcessPool:
    """A process pool whose workers start in a background thread: starting them (the fork server
    imports :data:`_PRELOAD`, ~0.3 s) overlaps with whatever the caller does next.

    forkserver: a clean server process forks the workers (no threads inherited from the parent).
    Each worker is single-threaded (:func:`_single_threaded`): one worker per core."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        import multiprocessing as mp
        import threading
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(_PRELOAD)
        ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_single_threaded)
        self.executor = ex

        def warm() -> None:
            # submit() spawns a worker and blocks until it exists: done off the caller's thread
            for _ in range(self.workers):
                try:
                    ex.submit(_worker_ready)
                except RuntimeError:  # broken or shut down meanwhile
                    return

        self._warm = threading.Thread(target=warm, daemon=True)
        self._warm.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``executor.submit``; a pool broken by a dead worker is replaced by a fresh one first."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.executor.submit(fn, *args, **kwargs)
        except BrokenProcessPool:
            self.shutdown()
            self.restarts += 1
            self._start()
            return self.executor.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self._warm.join()
        self.executor.shutdown()


def _run_pool(
    jobs: list[tuple[str, Path]],
    out_dir: Path,
    workers: int,
    scheduler: str,
    progress: Callable[[dict[str, Any]], None],
    *,
    schedule: list[dict[str, Any]],
    written: list[dict[str, Any]],
    pool: _ProcessPool | None = None,
    skipped: Sequence[dict[str, str]] = (),
    force: bool = False,
    options: AnalysisOptions | None = None,
) -> list[dict[str, Any]]:
    options = options or AnalysisOptions()
    kw: dict[str, Any] = {"options": options}
    results: list[dict[str, Any]] = []
    if scheduler == "serial" or workers == 1 and scheduler == "processes":
        for cid, folder in jobs:
            r = analyze_capture(folder, cid, out_dir, force=force, **kw)
            progress(r)
            results.append(r)
        return results
    # unchanged captures are answered from the cache here; the rest become a task graph
    todo = []
    for cid, folder in jobs:
        prev = None if force else cached_result(folder, cid, out_dir, options)
        if prev is not None:
            progress(prev)
            results.append(prev)
        else:
            todo.append((cid, folder))
    tasks = _plan_tasks(todo, out_dir, force, options, workers)
    schedule.extend(tasks)

    def on_done(task: dict[str, Any], r: Any) -> None:
        if task["fn"] is not analyze_capture:
            return  # a decode that failed is decoded again (and reported) by its capture's analysis
        if isinstance(r, BaseException):
            folder = task["args"][0]
            r = {
                "capture": task["capture"],
                "folder": str(folder),
                "status": "failed",
                "error": f"the worker process analysing it died ({type(r).__name__}: {r})",
                "code": "WORKER_DIED",
                "cached": False,
                "seconds": 0.0,
            }
        progress(r)
        results.append(r)

    if scheduler == "processes":
        from concurrent.futures import FIRST_COMPLETED, wait

        own = pool is None
        if pool is None:
            pool = _ProcessPool(workers)  # its workers start in the background
        try:
            _run_graph(
                tasks,
                workers,
                lambda t: pool.submit(_timed, t["fn"], *t["args"], **t["kwargs"]),
                lambda fs: wait(fs, return_when=FIRST_COMPLETED).done,
                on_done,
                retries=1,
            )
            # the campaign tables need pandas, which the workers have loaded and this process has not
            results.sort(key=lambda r: r["capture"])
            written.append(pool.submit(write_campaign, out_dir, results, skipped).result())
        finally:
            if own:
                pool.shutdown()
        return results
    _run_dask(tasks, workers, scheduler, on_done)
    return results


def _run_dask(
    tasks: list[dict[str, Any]], workers: int, scheduler: str, on_done: Callable[[dict[str, Any], Any], None]
) -> None:
    """Run the task graph on Dask: "dask-local" starts a local cluster; anything else is a
    scheduler address. The graph goes to Dask whole: dependencies as futures, priorities as Dask
    priorities."""
    from distributed import Client, LocalCluster
    from distributed import as_completed as d_as_completed

    cluster = None
    if scheduler == "dask-local":
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futs: dict[str, Any] = {}
        finals = []
        for t in tasks:  # _plan_tasks lists a task after its dependencies
            deps = [futs[d] for d in t["deps"]]
            futs[t["key"]] = client.submit(
                _after, deps, t["fn"], *t["args"], key=f"{t['key']}-{os.urandom(4).hex()}",
                priority=int(t["priority"]), pure=False, **t["kwargs"],
            )
            if t["fn"] is analyze_capture:
                finals.append(futs[t["key"]])
        for f in d_as_completed(finals):
            on_done({"fn": analyze_capture}, f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()



def _after(_deps: list[Any], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Dask task body: ``fn(*args, **kwargs)`` once ``_deps`` (results of other tasks) exist."""
    return fn(*args, **kwargs)


def analyze_dirs(
    roots: Sequence[Path],
    out_dir: Path,
    *,
    workers: int | None = None,
    scheduler: str = "processes",
    force: bool = False,
    quiet: bool = False,
    options: AnalysisOptions | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Discover, analyze (in parallel, cached) and write the campaign; returns the manifest.

    ``options``: the :class:`~analyzers.options.AnalysisOptions` (``fields`` replace some of them,
    as keywords: ``tolerance``, ``on_corrupt``, ``tick_hz``, ``chunk_events``), validated before
    anything runs and written into the manifest. The manifest's ``skipped`` lists every folder and
    file looked at that is no capture, with the reason."""
    out_dir = Path(out_dir)
    opts = AnalysisOptions.of(options, **fields)
    n_pool = workers or os.cpu_count() or 1
    pool = None
    if scheduler == "processes" and n_pool > 1 and (force or not (out_dir / "manifest.json").is_file()):
        # a fresh or forced run will need the workers: start them while the folders are searched
        pool = _ProcessPool(n_pool)
    tuned = _tune_malloc(True)
    try:
        return _analyze_dirs(roots, out_dir, workers, scheduler, force, quiet, pool, opts)
    finally:
        if pool is not None:
            pool.shutdown()
        if tuned:
            _tune_malloc(False)


def _analyze_dirs(
    roots: Sequence[Path],
    out_dir: Path,
    workers: int | None,
    scheduler: str,
    force: bool,
    quiet: bool,
    pool: _ProcessPool | None,
    opts: AnalysisOptions,
) -> dict[str, Any]:
    found = discover_all(roots, exclude=[out_dir])
    jobs, skipped = found.captures, found.skipped
    # largest first: the pool stays busy to the end (longest-processing-time-first scheduling)
    jobs.sort(key=lambda j: -_capture_bytes(j[1]))
    workers = workers or min(len(jobs), os.cpu_count() or 1) or 1
    done = [0]
    t0 = time.perf_counter()

    def progress(r: dict[str, Any]) -> None:
        done[0] += 1
        if quiet:
            return
        status = "cached" if r.get("cached") else r.get("status")
        extra = f"  {r.get('verdict', '')}" if r.get("status") == "ok" else f"  {r.get('error', '')}"
        print(
            f"[{done[0]}/{len(jobs)}] {r['capture']}: {status} ({r.get('seconds', 0):.2f} s){extra}",
            file=sys.stderr,
            flush=True,
        )

    schedule: list[dict[str, Any]] = []
    written: list[dict[str, Any]] = []
    results = _run_pool(
        jobs,
        out_dir,
        workers,
        scheduler,
        progress,
        schedule=schedule,
        written=written,
        pool=pool,
        force=force,
        skipped=skipped,
        options=opts,
    )
    results.sort(key=lambda r: r["capture"])
    # the process pool writes the campaign in a worker; otherwise it is written here
    manifest = written[0] if written else write_campaign(out_dir, results, skipped)
    manifest["seconds"] = time.perf_counter() - t0
    manifest["options"] = opts.as_dict()  # what every result of this campaign was made with
    # the task graph as run (process pool: when each task was submitted and done, and when and in
    # which worker it ran, in s from the start of the graph)
    manifest["schedule"] = [
        {k: t.get(k) for k in ("key", "priority", "started", "ended", "ran", "pid")} for t in schedule
    ]
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, default=_json_default))
    return manifest
