# A throwaway PostgreSQL server for the journal tests, sourced by .ci/run:
#
#     . .ci/postgres.sh && trap postgres_stop EXIT && postgres_start
#
# postgres_start installs Debian's `postgresql` package when no server is on
# the machine, creates a cluster in a temporary folder (initdb refuses root, so
# as `nobody` when run as root), starts it on a unix socket in that folder
# only (no TCP port: nothing to collide with), and exports
# INERT_TEST_POSTGRES_DSN, a superuser DSN the tests create their databases
# with. postgres_stop stops it and removes the folder. By hand, for a
# developer: `. .ci/postgres.sh && postgres_start`, then `postgres_stop`.
#
# The cluster is disposable, so fsync is off by default (INERT_PG_FSYNC=on
# keeps it, for benchmarks whose figures must include it).

postgres_bindir() {
  local d
  # Debian keeps the server out of PATH, one folder per major version: the newest.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

postgres_install() {
  if postgres_bindir >/dev/null; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "postgres.sh: no PostgreSQL server here, and installing one needs root (apt-get install postgresql)" >&2
    return 1
  fi
  echo "postgres.sh: installing PostgreSQL from Debian's packages"
  # The package would create and start a cluster of its own; ours is throwaway.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/inert-ci.conf
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

postgres_start() {
  local bindir
  postgres_install || return 1
  bindir=$(postgres_bindir) || { echo "postgres.sh: no initdb after installing" >&2; return 1; }
  INERT_PG_DIR=$(mktemp -d /tmp/inert-pg.XXXXXX)
  INERT_PG_CTL="$bindir/pg_ctl"
  INERT_PG_RUN=()
  if [ "$(id -u)" = 0 ]; then
    chown nobody "$INERT_PG_DIR"
    INERT_PG_RUN=(runuser -u nobody --)
  fi
  export INERT_PG_DIR INERT_PG_CTL
  if ! "${INERT_PG_RUN[@]}" "$bindir/initdb" -D "$INERT_PG_DIR/data" -U postgres --auth=trust --no-sync \
      -E UTF8 --locale=C >"$INERT_PG_DIR/initdb.log" 2>&1; then
    cat "$INERT_PG_DIR/initdb.log" >&2
    return 1
  fi
  if ! "${INERT_PG_RUN[@]}" "$INERT_PG_CTL" -D "$INERT_PG_DIR/data" -l "$INERT_PG_DIR/server.log" -w -t 60 \
      -o "-c listen_addresses='' -k $INERT_PG_DIR -c fsync=${INERT_PG_FSYNC:-off} -c max_connections=200" \
      start >/dev/null; then
    cat "$INERT_PG_DIR/server.log" >&2
    return 1
  fi
  export INERT_TEST_POSTGRES_DSN="postgresql://postgres@/postgres?host=$INERT_PG_DIR"
  echo "postgres.sh: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on $INERT_PG_DIR"
}

postgres_stop() {
  if [ -n "${INERT_PG_DIR:-}" ] && [ -d "$INERT_PG_DIR/data" ]; then
    "${INERT_PG_RUN[@]}" "$INERT_PG_CTL" -D "$INERT_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  if [ -n "${INERT_PG_DIR:-}" ]; then rm -rf "$INERT_PG_DIR"; fi
  unset INERT_PG_DIR INERT_TEST_POSTGRES_DSN
}
