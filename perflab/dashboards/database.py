"""Database: queries by command, connections, InnoDB buffer pool, row operations, disk I/O.

mysqld_exporter (job `mysqld`) or postgres_exporter (job `postgres`) for the server's counters: the
statements by command, the sessions and the CPU show either engine (perflab/tiers.py's selectors match
both); the InnoDB and row panels are MariaDB/MySQL's and stay empty on PostgreSQL. node_exporter (job
`node`, tier `db`) for the db host's disks, process-exporter via perflab/tiers.py for its CPU.
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
        "InnoDB buffer pool: data and dirty pages",
        "Bytes of data in the buffer pool, the dirty part not yet written, and the pool's size.",
        units.BytesIEC,
        queries((f"sum(mysql_global_status_innodb_buffer_pool_bytes_data{{{MYSQLD}}})", "data"),
                (f"sum(mysql_global_status_innodb_buffer_pool_bytes_dirty{{{MYSQLD}}})", "dirty"),
                (f"sum(mysql_global_variables_innodb_buffer_pool_size{{{MYSQLD}}})", "pool size")), width=6)


def how_often_do_reads_miss_the_buffer_pool() -> Panel:
    return timeseries(
        "InnoDB buffer pool: reads from disk",
        "Share of logical page reads the buffer pool could not serve (Innodb_buffer_pool_reads / "
        "_read_requests): above a few percent the working set does not fit.",
        units.PercentUnit,
        [query(f"sum(rate(mysql_global_status_innodb_buffer_pool_reads{{{MYSQLD}}}[{WINDOW}])) / "
               f"sum(rate(mysql_global_status_innodb_buffer_pool_read_requests{{{MYSQLD}}}[{WINDOW}]))",
               "miss ratio")], width=6)


def how_many_rows_are_touched() -> Panel:
    return timeseries(
        "Row operations per second",
        "Row-level handler calls per second: rows written, updated, deleted, and read by key, by "
        "position or by scan (read_rnd_next: full scans).",
        units.OpsPerSecond,
        [query(f'sum by (handler) (rate(mysql_global_status_handlers_total{{{MYSQLD}, '
               f'handler=~"write|update|delete|read_.*"}}[{WINDOW}])) > 0', "{{handler}}")], stacked=True)


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


def how_often_does_innodb_sync() -> Panel:
    return timeseries(
        "InnoDB fsyncs per second",
        "fsync() calls InnoDB made per second (redo log and data files): each commit of a write "
        "transaction costs at least one with innodb_flush_log_at_trx_commit = 1.",
        units.OpsPerSecond,
        [query(f"sum(rate(mysql_global_status_innodb_data_fsyncs{{{MYSQLD}}}[{WINDOW}]))", "fsyncs")], width=8)


def database_dashboard() -> dashboard_model.Dashboard:
    board = new_dashboard(UID, "perflab: database",
                          "The database: statements, connections, InnoDB buffer pool, row operations, disk I/O.")
    board = (board.with_row(dashboard_builder.Row("Work"))
             .with_panel(which_commands_run()).with_panel(how_many_rows_are_touched())
             .with_row(dashboard_builder.Row("Capacity"))
             .with_panel(how_busy_is_the_db_cpu()).with_panel(how_many_connections())
             .with_panel(how_full_is_the_buffer_pool()).with_panel(how_often_do_reads_miss_the_buffer_pool())
             .with_row(dashboard_builder.Row("Disk"))
             .with_panel(how_much_does_the_db_disk_move()).with_panel(how_busy_is_the_db_disk())
             .with_panel(how_often_does_innodb_sync()))
    return number_panels(board.build())
