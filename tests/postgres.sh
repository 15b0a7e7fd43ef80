#!/usr/bin/env bash
# A throwaway PostgreSQL server for the class database's tests (Debian's `postgresql` package).
#   tests/postgres.sh start   prints the server's SQLAlchemy URL (its folder is in the URL)
#   tests/postgres.sh stop URL
# It listens on a Unix socket in its own folder only (no TCP port), runs as the `postgres` user
# when started by root (PostgreSQL refuses root), and trusts local connections: a test server.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "no PostgreSQL server installed (apt-get install postgresql)" >&2; exit 1; }
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "${1:-}" in
  start)
    dir=$(mktemp -d /tmp/attention-explorer-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U explorer -E UTF8 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses= -k $dir -c fsync=off" start >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir" -U explorer classes
    echo "postgresql+psycopg://explorer@/classes?host=$dir"
    ;;
  stop)
    dir=${2:?the URL printed by start}; dir=${dir##*host=}
    case "$dir" in /tmp/attention-explorer-pg.*) ;; *) echo "not a test server: $dir" >&2; exit 1;; esac
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start | stop URL" >&2; exit 2;;
esac
