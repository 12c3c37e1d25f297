#!/usr/bin/env python3
"""Start a server, wait for its port, run a command, stop the server."""
import subprocess, sys
print("usage: with_server.py --server CMD --port N -- COMMAND", file=sys.stderr)
