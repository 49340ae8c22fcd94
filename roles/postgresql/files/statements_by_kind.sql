-- The statements the DB executed, by database, user and kind: the statement's first word, lower case, after
-- any leading comment lines (select, insert, update, delete, ...), as TechEmpower's verify counts them, and
-- their rows (pg_stat_statements' rows: a SELECT's rows returned, an INSERT's, UPDATE's or DELETE's rows
-- written), which their verify counts too: the bench's verify judges a scenario's `rows` on them.
-- Every user's but the monitoring roles' (pg_monitor's members: postgres_exporter, the superuser): the
-- exporter's queries are SELECTs too, 19 to 30 per scrape at rest, which hid 1,058 requests' statements per
-- request in the lab's own.
-- The one definition both readers use (role postgresql applies it): postgres_exporter's queries file
-- (roles/postgres_exporter/templates/queries.yaml.j2, the lab's statements per request) and the bench's
-- verify (roles/bench/files/verify_app.py). pg_stat_statements shows every user's query text to the members
-- of pg_read_all_stats (pg_monitor is one), as the caller of this view: its owner's rights do not widen it.
CREATE SCHEMA IF NOT EXISTS perflab_monitor AUTHORIZATION postgres;

CREATE OR REPLACE VIEW perflab_monitor.statements_by_kind AS
SELECT d.datname,
       r.rolname AS usename,
       coalesce(lower((regexp_match(s.query, '^(?:\s|--[^\n]*\n)*(\w+)'))[1]), '') AS kind,
       sum(s.calls) AS calls,
       sum(s.rows) AS rows
FROM pg_stat_statements s
JOIN pg_database d ON d.oid = s.dbid
JOIN pg_roles r ON r.oid = s.userid
WHERE NOT pg_has_role(r.oid, 'pg_monitor', 'MEMBER')
GROUP BY 1, 2, 3;

GRANT USAGE ON SCHEMA perflab_monitor TO pg_monitor;
GRANT SELECT ON perflab_monitor.statements_by_kind TO pg_monitor;
