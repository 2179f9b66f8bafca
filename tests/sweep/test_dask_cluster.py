"""The LocalCluster twin starts for sweeps and capacity probes leaves Dask's port 8787 alone."""

from __future__ import annotations

import contextlib
import errno
import socket

from twin.sweep.run import dask_client


def test_local_cluster_does_not_bind_8787_and_starts_when_it_is_taken():
    """With 8787 held by another program, the cluster starts without a warning (the suite turns
    warnings into errors) and its scheduler's HTTP endpoint is a free loopback port, no dashboard."""
    with contextlib.ExitStack() as stack:
        holder = stack.enter_context(socket.socket())
        try:
            holder.bind(("0.0.0.0", 8787))
            holder.listen()
        except OSError as exc:  # already taken by someone else: the same situation
            assert exc.errno == errno.EADDRINUSE
        with dask_client(workers=1) as client:
            assert client.submit(sum, [1, 2]).result() == 3
            scheduler = client.cluster.scheduler
            assert scheduler.http_server.port not in (8787, 0)
            assert scheduler.http_server.address == "127.0.0.1"
