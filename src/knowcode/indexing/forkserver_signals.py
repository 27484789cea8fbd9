"""Imported only by the parser workers' forkserver (as a preload): it ignores Ctrl-C.

A terminal sends SIGINT to the whole process group. A forkserver killed by it while the pool is still
starting workers leaves the pool waiting for a worker that never comes, so Ctrl-C under load could
hang the run; the indexing process handles Ctrl-C and shuts the pool down instead.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
