#!/usr/bin/env bash
# Makes sure the Postgres the tests use is up. Tests find it through
# WATERLINE_TEST_DATABASE_URL (default: the machine's cluster on
# 127.0.0.1:5432, user postgres, trust auth). When that default is in use
# and the machine's packaged cluster is down, start it.
set -euo pipefail

if [ -n "${WATERLINE_TEST_DATABASE_URL:-}" ]; then
	exit 0 # someone else's server: not ours to start
fi
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
	exit 0
fi
if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ ! -d /etc/postgresql ]; then
	echo "test-postgres: no Postgres on 127.0.0.1:5432 and no packaged cluster to start;" >&2
	echo "  install one (Debian: apt-get install postgresql) or set WATERLINE_TEST_DATABASE_URL" >&2
	exit 1
fi
version=$(ls /etc/postgresql | sort -n | tail -1)
echo "test-postgres: starting the packaged cluster $version/main" >&2
pg_ctlcluster --skip-systemctl-redirect "$version" main start
for _ in $(seq 1 50); do
	pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
	sleep 0.2
done
echo "test-postgres: Postgres did not come up on 127.0.0.1:5432" >&2
exit 1
