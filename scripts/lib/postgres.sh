#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and local runs, on loopback only.
# initdb refuses to run as root, so the cluster runs as the unprivileged `postgres` system user
# (created by Debian's postgresql package) when we are root.
#
#   source scripts/lib/postgres.sh
#   pg_start_cluster DIR PORT     # initdb (once) + start; exports DATABASE_URL
#     (PG_EXTRA_OPTIONS: more server settings, as "-c shared_buffers=1GB";
#      PG_LOCALE: the cluster's locale, as "en_US.UTF-8"; unset, the C locale)
#   pg_stop_cluster DIR

pg_bin_dir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [[ -x "$dir/initdb" ]] && { echo "$dir"; return; }
    done
    echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2
    return 1
}

pg_as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

pg_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pg_start_cluster() {
    local dir="$1" port="$2" bin
    bin="$(pg_bin_dir)"
    mkdir -p "$dir"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    if [[ ! -f "$dir/PG_VERSION" ]]; then
        say "initdb $dir"
        local locale=(--no-locale)
        [[ -n "${PG_LOCALE:-}" ]] && locale=(--locale="$PG_LOCALE")
        pg_as_owner "$bin/initdb" -D "$dir" -U linkstr --auth=trust --encoding=UTF8 "${locale[@]}" >/dev/null
    fi
    say "starting PostgreSQL on 127.0.0.1:$port ($dir)"
    pg_as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c max_connections=200 ${PG_EXTRA_OPTIONS:-}" \
        start >/dev/null
    pg_as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U linkstr -d postgres -qAt \
        -c "SELECT 1 FROM pg_database WHERE datname = 'linkstr'" | grep -q 1 ||
        pg_as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U linkstr linkstr
    export DATABASE_URL="postgres://linkstr@127.0.0.1:$port/linkstr"
    export POSTGRES_TEST_URL="$DATABASE_URL"
}

pg_stop_cluster() {
    local dir="$1" bin
    bin="$(pg_bin_dir)" || return 0
    [[ -f "$dir/postmaster.pid" ]] && pg_as_owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
}
