#!/usr/bin/env bash
# The README's first command (until `waterline demo` lands): build
# Waterline and run `waterline serve` with an admin token printed. Without
# DATABASE_URL it runs on a private Postgres cluster kept in .demo/pg,
# made from the system's PostgreSQL binaries (installed through apt when
# missing and we are root).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${DATABASE_URL:-}" ]; then
	if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
		if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "demo: installing PostgreSQL (apt)" >&2
			DEBIAN_FRONTEND=noninteractive apt-get update -qq
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null
		else
			echo "demo: PostgreSQL binaries not found; install them (e.g. sudo apt-get install postgresql) or set DATABASE_URL" >&2
			exit 1
		fi
	fi
	mkdir -p bin
	go build -o bin/waterline ./cmd/waterline
	go build -o bin/pgtmp ./internal/pgtmp/cmd/pgtmp
	exec bin/pgtmp -dir .demo/pg -- "$0"
fi

mkdir -p bin && go build -o bin/waterline ./cmd/waterline
bin/waterline migrate
token=$(bin/waterline token create --name demo --scope admin 2>/dev/null)
addr=${WATERLINE_ADDR:-127.0.0.1:8080}
cat >&2 <<MSG

Waterline on http://$addr — admin API token (shown once):

  $token

  curl -H "Authorization: Bearer $token" http://$addr/api/v1/incidents

Ctrl-C stops it.
MSG
exec bin/waterline serve
