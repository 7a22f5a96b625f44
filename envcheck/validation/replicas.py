"""Level 2: all replicas agree. Replica i contributes a tensor filled with i + 1; after an all-reduce
under the strategy every replica must hold n(n + 1) / 2 everywhere, and the strategy's reduce of
the per-replica values must give the same sum.

This is the collective that every training step of MirroredStrategy runs on the gradients: a
broken NCCL install or peer-to-peer link between GPUs shows here as a wrong sum, a hang or an error.
"""

from __future__ import annotations

import time

import numpy as np

from envcheck.machine import short_device
from envcheck.validation.checks import Check

REPEATS = 5


def run_level2(plan, *, elements: int = 1 << 20) -> list[Check]:
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    strategy, replicas = plan.strategy, plan.replicas
    expected = replicas * (replicas + 1) / 2.0
    name = f"all-reduce over {replicas} replica{'s' if replicas != 1 else ''} ({', '.join(short_device(d) for d in plan.devices)})"

    @tf.function
    def all_reduce():
        def replica_fn():
            context = tf.distribute.get_replica_context()
            value = tf.fill([elements], tf.cast(context.replica_id_in_sync_group + 1, tf.float32))
            return context.all_reduce(tf.distribute.ReduceOp.SUM, value)

        return strategy.run(replica_fn)

    started = time.perf_counter()
    try:
        per_replica = all_reduce()  # the warm-up: traces and sets up the collective
        results = [np.asarray(t) for t in strategy.experimental_local_results(per_replica)]
        timer = time.perf_counter()
        for _ in range(REPEATS):
            out = all_reduce()
        [np.asarray(t) for t in strategy.experimental_local_results(out)]  # waits for every replica
        seconds = (time.perf_counter() - timer) / REPEATS
        ids = strategy.run(
            lambda: tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32)
        )
        reduced = float(strategy.reduce(tf.distribute.ReduceOp.SUM, ids, axis=None))
    except Exception as exc:  # noqa: BLE001 - a failing collective is the finding
        return [
            Check(
                2,
                name,
                False,
                f"failed: {type(exc).__name__}: {exc}".splitlines()[0],
                seconds=time.perf_counter() - started,
            )
        ]

    wrong = [i for i, r in enumerate(results) if r.shape != (elements,) or not np.all(r == expected)]
    megabytes = elements * 4 / 1e6
    figures = {
        "replicas": replicas,
        "expected_sum": expected,
        "strategy_reduce": reduced,
        "replicas_disagreeing": wrong,
        "megabytes": megabytes,
        "milliseconds": round(seconds * 1e3, 3),
        # The "algorithm bandwidth" of NCCL's tests: the size of the buffer over the time to reduce it.
        "gigabytes_per_second": round(megabytes / 1e3 / seconds, 3) if seconds > 0 else None,
    }
    took = time.perf_counter() - started
    if wrong:
        values = ", ".join(f"replica {i}: {results[i].ravel()[:1]}" for i in wrong[:4])
        return [Check(2, name, False, f"replicas disagree with the sum {expected:g} ({values})", figures, took)]
    if reduced != expected:
        return [Check(2, name, False, f"strategy.reduce gave {reduced:g}, expected {expected:g}", figures, took)]
    note = "" if replicas > 1 else " (one replica: nothing to agree on)"
    return [
        Check(
            2,
            name,
            True,
            f"sum {expected:g} on every replica; {megabytes:.1f} MB in {figures['milliseconds']:.2f} ms"
            f" ({figures['gigabytes_per_second']} GB/s){note}",
            figures,
            took,
        )
    ]
