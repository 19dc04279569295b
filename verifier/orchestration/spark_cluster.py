"""``verifier chaos --spark-cluster standalone``: the run's pipelines on a Spark cluster
the run starts (verifier.harness.spark_standalone), and the faults that need it.

The cluster is the run's: started at its set-up (its master and workers boot while the
observer starts; the pipelines' drivers start once every worker is registered), its
processes in the run's process table and ledger beside the generators and the observer,
stopped with them whatever happens (a clean end, an error, Ctrl-C or SIGTERM). Only the
pipelines under test run there: the observer and the tool's own verification stay in
local mode, so the cluster's slots are the pipelines' alone. A user's own master stays
``--spark-master URL``.
"""

from __future__ import annotations

from pathlib import Path

from verifier.harness.faults import kinds
from verifier.harness.spark_standalone import StandaloneCluster, pipeline_conf
from verifier.orchestration.pipeline_plan import HOLD_MS

CLUSTERS = ("standalone",)


def kills_executors(faults) -> bool:
    """Does the schedule (or fault list) kill an executor or a worker?"""
    spark = kinds.of_family("spark")
    return any((f.get("kind") if isinstance(f, dict) else f.kind) in spark for f in faults)


def problems(scenario, opts) -> list[str]:
    """What keeps ``scenario`` from running with these options (usage errors)."""
    out = []
    if opts.spark_cluster is not None and not opts.pipelines:
        out.append("--spark-cluster runs the pipelines under test: name them with "
                   "--pipeline (e.g. --pipeline kafka-sink,delta)")
    if opts.spark_cluster is not None and opts.spark_master:
        out.append("--spark-cluster starts a cluster for the run; --spark-master names "
                   "your own: give one or the other")
    if opts.spark_cluster is not None:
        from importlib.metadata import version

        own = version("pyspark")
        other = sorted({p.spark_version for p in opts.pipelines
                        if getattr(p, "spark_version", None) not in (None, own)})
        if other:  # the cluster is the project's own PySpark distribution
            out.append(f"--spark-cluster starts a cluster of PySpark {own}; pipelines on "
                       f"--spark-version {','.join(other)} cannot run there (not yet)")
    if kills_executors(scenario.faults) and opts.spark_cluster is None:
        out.append(f"scenario {scenario.name} kills Spark executors or workers: they run "
                   "on the cluster the run starts with --spark-cluster standalone")
    return out


def cluster_for(opts, run_dir: Path, pipelines: int) -> StandaloneCluster | None:
    """The run's cluster (not started): each worker a core per pipeline (one executor of
    each pipeline's application on each worker)."""
    if opts.spark_cluster is None or pipelines == 0:
        return None
    return StandaloneCluster(Path(run_dir) / "logs" / "spark-cluster", cores=pipelines)


def boot(cluster: StandaloneCluster) -> None:
    """Start the master and the workers without waiting (the observer starts meanwhile);
    :meth:`StandaloneCluster.wait_workers` before the pipelines start."""
    cluster.folder.mkdir(parents=True, exist_ok=True)
    cluster.master.start()
    for w in cluster.workers:
        w.start()


def place(entries: dict, cluster: StandaloneCluster, faults) -> None:
    """config.json's pipeline entries on the cluster: its master, the applications'
    settings, and the hold inside a task when the schedule kills executors or workers."""
    hold_task = kills_executors(faults)
    for entry in entries.values():
        entry["spark_master"] = cluster.url
        entry["spark_conf"] = pipeline_conf(len(cluster.workers))
        if hold_task:
            entry["hold_where"] = "task"
            entry["hold_ms"] = entry.get("hold_ms") or HOLD_MS

def tidy(cluster: StandaloneCluster) -> int:
    """After the run: the jars each executor fetched into its work folder (the Kafka
    connector's and Delta's, ~20 MB an executor: a run's folder grew by 250 MB) are
    deleted; the executors' logs stay. Returns how many files went."""
    gone = 0
    for jar in cluster.folder.glob("worker-*/app-*/*/*.jar"):
        try:
            jar.unlink()
            gone += 1
        except OSError:
            pass
    return gone


__all__ = ["CLUSTERS", "boot", "cluster_for", "kills_executors", "place", "problems",
           "tidy"]
