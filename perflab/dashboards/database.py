"""Database: queries by command, connections, buffer pool, row operations, commits, disk I/O.

mysqld_exporter (job `mysqld`) or postgres_exporter (job `postgres`) for the server's counters. Every
panel shows either engine (perflab/tiers.py's selectors match both; a query is MariaDB/MySQL's `or`
PostgreSQL's pg_stat_database and pg_settings) but the InnoDB buffer pool's data and dirty pages, which
PostgreSQL's exporter does not export (its shared buffers' size shows). node_exporter (job `node`, tier
`db`) for the db host's disks, process-exporter via perflab/tiers.py for its CPU.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dashboard_builder
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import units

from perflab import tiers
from perflab.dashboards.common import Panel, new_dashboard, number_panels, only_tier, queries, query, timeseries

UID = "perflab-database"
WINDOW = "$__rate_interval"
MYSQLD = 'job="mysqld"'
POSTGRES = 'job="postgres"'
# Block devices of the db host that hold data (zram swap, loop and ram disks do not).
DB_DISKS = 'job="node", tier="db", device!~"zram.*|loop.*|ram.*"'


def pg_rate(column: str) -> str:
    """PostgreSQL's pg_stat_database COLUMN per second, summed over the server's databases."""
    return f"sum(rate(pg_stat_database_{column}{{{POSTGRES}}}[{WINDOW}]))"


def pg_as(column: str, label: str, value: str) -> str:
    """pg_rate(COLUMN) with LABEL=VALUE, beside MariaDB/MySQL's series of that label."""
    return f'label_replace({pg_rate(column)}, "{label}", "{value}", "", "")'


def which_commands_run() -> Panel:
    return timeseries(
        "Statements per second by command",
        "Statements the server executed per second by command (MariaDB/MySQL's Com_*, PostgreSQL's "
        "pg_stat_statements by first word), commands that ran only.",
        units.OpsPerSecond,
        [query(f"sum by (command) (rate({tiers.db_statements('.+')}[{WINDOW}])) > 0", "{{command}}")], stacked=True)


def how_busy_is_the_db_cpu() -> Panel:
    return timeseries(
        "DB tier CPU utilization",
        "Busy cores / allotted cores of the db tier (perflab/tiers.py): near 100% the database's CPU is the limit.",
        units.PercentUnit, [query(only_tier(tiers.cpu_utilization(WINDOW), "db"), "{{tier}}")], width=6)


def how_many_connections() -> Panel:
    return timeseries(
        "Connections and running sessions",
        "Open client connections, sessions executing a statement, and the max_connections cap.",
        units.Short,
        queries((f"sum(mysql_global_status_threads_connected{{{MYSQLD}}}) or sum(pg_stat_activity_count{{{POSTGRES}}})",
                 "connected"),
                (tiers.DB_SESSIONS_RUNNING, "running"),
                (f"sum(mysql_global_variables_max_connections{{{MYSQLD}}}) or sum(pg_settings_max_connections{{{POSTGRES}}})",
                 "max_connections")), width=6)


def how_full_is_the_buffer_pool() -> Panel:
    return timeseries(
        "Buffer pool: data and dirty pages, its size",
        "InnoDB: bytes of data in the buffer pool, the dirty part not yet written, and the pool's size. "
        "PostgreSQL: the size of its shared buffers (its exporter does not say how full they are).",
        units.BytesIEC,
        queries((f"sum(mysql_global_status_innodb_buffer_pool_bytes_data{{{MYSQLD}}})", "data"),
                (f"sum(mysql_global_status_innodb_buffer_pool_bytes_dirty{{{MYSQLD}}})", "dirty"),
                (f"sum(mysql_global_variables_innodb_buffer_pool_size{{{MYSQLD}}}) "
                 f"or sum(pg_settings_shared_buffers_bytes{{{POSTGRES}}})", "pool size")), width=6)


def how_often_do_reads_miss_the_buffer_pool() -> Panel:
    return timeseries(
        "Buffer pool: reads it missed",
        "Share of page reads the buffer pool could not serve: InnoDB's Innodb_buffer_pool_reads / "
        "_read_requests, PostgreSQL's blks_read / (blks_read + blks_hit), whose misses the OS's page cache may "
        "still serve. Above a few percent the working set does not fit.",
        units.PercentUnit,
        [query(f"sum(rate(mysql_global_status_innodb_buffer_pool_reads{{{MYSQLD}}}[{WINDOW}])) / "
               f"sum(rate(mysql_global_status_innodb_buffer_pool_read_requests{{{MYSQLD}}}[{WINDOW}])) "
               f"or {pg_rate('blks_read')} / ({pg_rate('blks_read')} + {pg_rate('blks_hit')})",
               "miss ratio")], width=6)


def how_many_rows_are_touched() -> Panel:
    return timeseries(
        "Row operations per second",
        "Rows per second. MariaDB/MySQL's row-level handler calls: rows written, updated, deleted, and read "
        "by key, by position or by scan (read_rnd_next: full scans). PostgreSQL's pg_stat_database: rows "
        "inserted, updated, deleted, fetched (by index scans) and returned (by scans).",
        units.OpsPerSecond,
        [query(f'sum by (handler) (rate(mysql_global_status_handlers_total{{{MYSQLD}, '
               f'handler=~"write|update|delete|read_.*"}}[{WINDOW}])) > 0 or ('
               + " or ".join(pg_as(f"tup_{rows}", "handler", rows)
                             for rows in ("inserted", "updated", "deleted", "fetched", "returned"))
               + ") > 0", "{{handler}}")], stacked=True)


def how_much_does_the_db_disk_move() -> Panel:
    return timeseries(
        "DB host disk throughput",
        "Bytes read and written per second on the db host's disks. In the local lab the containers "
        "share the machine's disk: other tiers' I/O shows here too.",
        units.BytesPerSecondIEC,
        queries((f"sum by (device) (rate(node_disk_read_bytes_total{{{DB_DISKS}}}[{WINDOW}]))", "read {{device}}"),
                (f"sum by (device) (rate(node_disk_written_bytes_total{{{DB_DISKS}}}[{WINDOW}]))", "written {{device}}")),
        width=8)


def how_busy_is_the_db_disk() -> Panel:
    return timeseries(
        "DB host disk busy time",
        "Share of time the db host's disks had I/O in flight (100% = saturated for a single-queue disk).",
        units.PercentUnit,
        [query(f"max by (device) (rate(node_disk_io_time_seconds_total{{{DB_DISKS}}}[{WINDOW}]))", "{{device}}")],
        width=8)


def how_often_does_the_db_sync() -> Panel:
    return timeseries(
        "Fsyncs and commits per second",
        "InnoDB: fsync() calls per second (redo log and data files); each commit of a write transaction costs "
        "at least one with innodb_flush_log_at_trx_commit = 1. PostgreSQL: transactions committed per second "
        "(pg_stat_database's xact_commit); each that wrote flushes the WAL with synchronous_commit on.",
        units.OpsPerSecond,
        [query(f'label_replace(sum(rate(mysql_global_status_innodb_data_fsyncs{{{MYSQLD}}}[{WINDOW}])), "what", '
               f'"fsyncs", "", "") or {pg_as("xact_commit", "what", "commits")}', "{{what}}")], width=8)


def database_dashboard() -> dashboard_model.Dashboard:
    board = new_dashboard(UID, "perflab: database",
                          "The database: statements, connections, buffer pool, row operations, commits, disk I/O.")
    board = (board.with_row(dashboard_builder.Row("Work"))
             .with_panel(which_commands_run()).with_panel(how_many_rows_are_touched())
             .with_row(dashboard_builder.Row("Capacity"))
             .with_panel(how_busy_is_the_db_cpu()).with_panel(how_many_connections())
             .with_panel(how_full_is_the_buffer_pool()).with_panel(how_often_do_reads_miss_the_buffer_pool())
             .with_row(dashboard_builder.Row("Disk"))
             .with_panel(how_much_does_the_db_disk_move()).with_panel(how_busy_is_the_db_disk())
             .with_panel(how_often_does_the_db_sync()))
    return number_panels(board.build())
